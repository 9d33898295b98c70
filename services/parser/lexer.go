package parser

import "bytes"

// lexer splits HTML into the tokens the extractor needs: text, start and
// end tags. It follows the HTML tokenizer's rules for what ends a tag, an
// attribute value, a comment and the raw text of script, style, title and
// the like, but does less work than golang.org/x/net/html's Tokenizer: text
// is found with a vectorised search for '<', the bytes are never copied,
// and attributes are read only for the few tags that carry links. Attribute
// values are decoded by the HTML rules for attributes (unescapeAttr: "&not=1"
// in a URL is not "¬=1"), text by html.UnescapeString.
type lexer struct {
	b   []byte
	pos int

	// The current token.
	kind tokenKind
	text []byte // tokText: the text, decoded
	name string // tags: the lower-cased name ("" when over 16 bytes)
	raw  []byte // tags: the whole tag, "<" to ">"
	// attrFrom is where the attributes start in raw (after the name).
	attrFrom int
	nameBuf  [16]byte

	// rawEnd is set after a start tag whose content is raw text: the next
	// token is that text, up to "</rawEnd".
	rawEnd string
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokText
	tokStart
	tokSelfClosing
	tokEnd
	// tokRaw is the content of a raw-text element (script, style, title,
	// textarea...): not visible text, except a title's.
	tokRaw
)

func newLexer(b []byte) *lexer { return &lexer{b: b} }

// next reads the next token.
func (l *lexer) next() tokenKind {
	l.kind = l.lex()
	return l.kind
}

func (l *lexer) lex() tokenKind {
	if l.rawEnd != "" {
		end := l.rawEnd
		l.rawEnd, l.name = "", end
		start := l.pos
		l.pos = findRawEnd(l.b, l.pos, end)
		l.text = l.b[start:l.pos]
		if end == "title" || end == "textarea" { // RCDATA: references are decoded
			l.text = unescapeText(l.text)
		}
		return tokRaw
	}
	for l.pos < len(l.b) {
		i := bytes.IndexByte(l.b[l.pos:], '<')
		if i < 0 {
			l.text = unescapeText(l.b[l.pos:])
			l.pos = len(l.b)
			return tokText
		}
		if i > 0 {
			l.text = unescapeText(l.b[l.pos : l.pos+i])
			l.pos += i
			return tokText
		}
		// At '<'.
		rest := l.b[l.pos:]
		if len(rest) < 2 {
			l.text = rest
			l.pos = len(l.b)
			return tokText
		}
		switch c := rest[1]; {
		case c == '!':
			l.skipMarkup(rest)
			continue
		case c == '?':
			l.skipBogus(rest, 1)
			continue
		case c == '/':
			if len(rest) < 3 {
				l.text = rest
				l.pos = len(l.b)
				return tokText
			}
			if rest[2] == '>' { // "</>": nothing
				l.pos += 3
				continue
			}
			if !asciiLetter(rest[2]) {
				l.skipBogus(rest, 2)
				continue
			}
			if k, ok := l.tag(rest, 2); ok {
				return k
			}
			return tokEOF // a tag cut off by the end of input is dropped
		case asciiLetter(c):
			if k, ok := l.tag(rest, 1); ok {
				if rawText(l.name) { // "<script/>" too, as the tokenizer does
					l.rawEnd = l.name
				}
				return k
			}
			return tokEOF
		default: // "<" that starts nothing is text
			l.text = rest[:1]
			l.pos++
			return tokText
		}
	}
	return tokEOF
}

// rawText reports whether the content of element name is raw text for the
// tokenizer. (plaintext is left out: its content is everything to the end,
// which this lexer treats as ordinary markup; it is obsolete and rare.)
func rawText(name string) bool {
	switch name {
	case "script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript":
		return true
	}
	return false
}

func asciiLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// findRawEnd returns where the raw text from pos ends: at "</name" (any
// case) followed by whitespace, '/' or '>', else at the end of input.
func findRawEnd(b []byte, pos int, name string) int {
	for {
		i := bytes.Index(b[pos:], []byte("</"))
		if i < 0 {
			return len(b)
		}
		j := pos + i + 2
		if j+len(name) <= len(b) && equalFoldASCII(b[j:j+len(name)], name) {
			k := j + len(name)
			if k == len(b) || isSpace(b[k]) || b[k] == '/' || b[k] == '>' {
				return pos + i
			}
		}
		pos = j
	}
}

func equalFoldASCII(b []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// skipMarkup skips "<!...": a comment, a doctype, CDATA (a bogus comment in
// HTML content).
func (l *lexer) skipMarkup(rest []byte) {
	if bytes.HasPrefix(rest, []byte("<!--")) {
		body := rest[4:]
		switch {
		case bytes.HasPrefix(body, []byte(">")): // "<!-->"
			l.pos += 5
			return
		case bytes.HasPrefix(body, []byte("->")): // "<!--->"
			l.pos += 6
			return
		}
		end := bytes.Index(body, []byte("--"))
		for end >= 0 {
			after := body[end+2:]
			if bytes.HasPrefix(after, []byte(">")) {
				l.pos += 4 + end + 3
				return
			}
			if bytes.HasPrefix(after, []byte("!>")) {
				l.pos += 4 + end + 4
				return
			}
			next := bytes.Index(after, []byte("--"))
			if next < 0 {
				break
			}
			end += 2 + next
		}
		l.pos = len(l.b) // an unclosed comment runs to the end
		return
	}
	l.skipBogus(rest, 2)
}

// skipBogus skips to the next '>' (a bogus comment, a doctype).
func (l *lexer) skipBogus(rest []byte, from int) {
	i := bytes.IndexByte(rest[from:], '>')
	if i < 0 {
		l.pos = len(l.b)
		return
	}
	l.pos += from + i + 1
}

// tag reads a start (from 1) or end (from 2) tag at the start of rest, up
// to its '>' (quotes respected), and reports false when the input ends
// first.
func (l *lexer) tag(rest []byte, from int) (tokenKind, bool) {
	i := from
	n := 0
	long := false
	for ; i < len(rest); i++ {
		c := rest[i]
		if c == '>' || c == '/' || isSpace(c) {
			break
		}
		if n < len(l.nameBuf) {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			l.nameBuf[n] = c
			n++
		} else {
			long = true
		}
	}
	if long {
		l.name = ""
	} else {
		l.name = string(l.nameBuf[:n]) // short names are interned by the compiler's switch
	}
	// Attributes: find the closing '>' by the same walk attrs makes, so the
	// two can never disagree on where a tag ends (they once did: "<a ==\">"
	// ended at '>' here while attrs read an unterminated quote and panicked).
	l.attrFrom = i
	end := scanAttrs(rest, i, nil)
	if end < 0 {
		return 0, false
	}
	l.raw = rest[:end+1]
	l.pos += end + 1
	if from == 2 {
		return tokEnd, true
	}
	// Self-closing by the tokenizer's rule: the tag ends with "/>" (so
	// <a href=x/> is, its value being "x/").
	if rest[end-1] == '/' {
		return tokSelfClosing, true
	}
	return tokStart, true
}

// attrs reads the attributes of the current tag into a (reused). Values
// are decoded; they may point into the input.
func (l *lexer) attrs(a attrs) attrs {
	a = a[:0]
	scanAttrs(l.raw, l.attrFrom, func(key, val []byte) {
		a = append(a, struct{ k, v []byte }{lowerASCII(key), unescapeAttr(val)})
	})
	return a
}

// scanAttrs walks a tag's attributes from b[i] by the HTML tokenizer's
// states (before and after attribute name, before attribute value, quoted
// and unquoted values, self-closing start tag), calling visit (when not nil)
// with each raw name and value. It returns the index of the '>' that ends
// the tag, or -1 when the input ends first (the tokenizer then drops the
// tag). Every index it reads is checked: input from the web is arbitrary.
func scanAttrs(b []byte, i int, visit func(key, val []byte)) int {
	for {
		// Before attribute name.
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '>':
			return i
		case '/': // self-closing start tag state: anything but '>' is reconsumed
			i++
			continue
		}
		// Attribute name; a leading '=' belongs to it.
		start := i
		i++
		for i < len(b) && !isSpace(b[i]) && b[i] != '/' && b[i] != '>' && b[i] != '=' {
			i++
		}
		key := b[start:i]
		// After attribute name.
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) || b[i] != '=' {
			if visit != nil {
				visit(key, nil)
			}
			continue // '/', '>', the end or the next name: handled above
		}
		// Before attribute value.
		i++
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return -1
		}
		var val []byte
		switch q := b[i]; q {
		case '"', '\'':
			j := bytes.IndexByte(b[i+1:], q)
			if j < 0 {
				return -1
			}
			val = b[i+1 : i+1+j]
			i += j + 2 // after the value, whatever is not space, '/' or '>' starts a name
		case '>': // a missing value: the tag ends here
			if visit != nil {
				visit(key, nil)
			}
			return i
		default:
			s := i
			for i < len(b) && !isSpace(b[i]) && b[i] != '>' {
				i++
			}
			val = b[s:i]
		}
		if visit != nil {
			visit(key, val)
		}
	}
}

// lowerASCII returns b lower-cased, copying only when it has upper case.
func lowerASCII(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			out := bytes.Clone(b)
			for j := i; j < len(out); j++ {
				if 'A' <= out[j] && out[j] <= 'Z' {
					out[j] += 'a' - 'A'
				}
			}
			return out
		}
	}
	return b
}
