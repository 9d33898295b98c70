package parser

import (
	"strings"
	"sync"
)

// rawLink is a link as found, before resolution.
type rawLink struct {
	href     string
	kind     Kind
	nofollow bool
	anchor   string
	// textStart and textEnd delimit the anchor in the page text (equal for
	// links without text), for the link's context.
	textStart, textEnd int
}

// scanned is what one pass of the tokenizer collects.
type scanned struct {
	title, lang, metaLang string
	titleSeen, langSeen   bool
	baseHref, canonical   string
	hasBase, hasCanonical bool
	noindex, nofollow     bool
	text                  textBuf
	headings              []string
	hrefs                 []rawLink
	truncated             bool    // more than maxHrefs hrefs
	pooled                *[]byte // text's buffer, from textBufs
}

// release gives the text's buffer back for another page; s.text must not
// be read after.
func (s *scanned) release() {
	if s.pooled == nil {
		return
	}
	if cap(s.text.buf) <= 2*MaxText { // the text may grow its buffer past the cap
		*s.pooled = s.text.buf[:0]
	}
	textBufs.Put(s.pooled)
	s.pooled, s.text.buf = nil, nil
}

// attrs holds the attributes of the current tag; the slices may point into
// the page and are valid until the next token.
type attrs []struct{ k, v []byte }

// get returns the first attribute called key (HTML ignores later duplicates).
func (a attrs) get(key string) (string, bool) {
	for _, kv := range a {
		if string(kv.k) == key {
			return string(kv.v), true
		}
	}
	return "", false
}

// inline elements do not separate words; every other tag does.
func inline(name string) bool {
	switch name {
	case "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd", "mark",
		"q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var", "wbr", "big", "tt", "strike":
		return true
	}
	return false
}

// textBufs recycles the buffers a page's text is gathered in (scanned.
// release): a new one for each page was a fifteenth of the all-in-one's
// allocations. What leaves the buffer is copied (textBuf.String, context).
var textBufs = sync.Pool{New: func() any { b := make([]byte, 0, MaxText); return &b }}

func scanPage(body []byte, kinds Kind) *scanned {
	buf := textBufs.Get().(*[]byte)
	s := &scanned{text: textBuf{limit: MaxText, buf: (*buf)[:0]}, pooled: buf}
	s.hrefs = make([]rawLink, 0, 64)
	z := newLexer(body)
	var (
		a        = make(attrs, 0, 8)
		anchor   = textBuf{limit: MaxAnchor}
		openA    = -1 // index in s.hrefs of the open <a>, if any
		heading  = textBuf{limit: MaxHeading}
		inHead   = false // inside h1-h6
		closeTag = func() {
			if openA >= 0 {
				s.hrefs[openA].anchor = anchor.String()
				s.hrefs[openA].textEnd = s.text.Len()
				openA = -1
			}
		}
	)
	for {
		tt := z.next()
		switch tt {
		case tokEOF:
			closeTag()
			if s.lang == "" {
				s.lang = s.metaLang
			}
			return s
		case tokRaw:
			if z.name == "title" && !s.titleSeen {
				s.title, s.titleSeen = cleanTitle(z.text), true
			}
		case tokText:
			t := z.text
			s.text.write(t)
			if openA >= 0 {
				anchor.write(t)
			}
			if inHead {
				heading.write(t)
			}
		case tokEnd:
			name := z.name
			switch name {
			case "a":
				closeTag()
			case "h1", "h2", "h3", "h4", "h5", "h6":
				if inHead {
					if h := heading.String(); h != "" && len(s.headings) < MaxHeadings {
						s.headings = append(s.headings, h)
					}
					inHead = false
				}
			}
			if !inline(name) {
				s.text.sep()
				anchor.sep()
				heading.sep()
			}
		case tokStart, tokSelfClosing:
			name := z.name
			if !inline(name) {
				s.text.sep()
				anchor.sep()
				heading.sep()
			}
			switch name {
			case "a", "area":
				a = z.attrs(a)
				if name == "a" {
					closeTag() // <a> does not nest: a new one closes the last
				}
				kind := KindA
				if name == "area" {
					kind = KindArea
				}
				href, ok := a.get("href")
				if !ok || kinds&kind == 0 {
					continue
				}
				rel, _ := a.get("rel")
				s.add(rawLink{href: href, kind: kind, nofollow: relHas(rel, "nofollow")})
				// A self-closing <a/> opens an anchor all the same (HTML
				// ignores the slash on elements that are not void).
				if name == "a" && len(s.hrefs) > 0 && !s.truncated {
					openA = len(s.hrefs) - 1
					anchor.buf, anchor.space = anchor.buf[:0], false
				}
			case "img", "source":
				a = z.attrs(a)
				if alt, ok := a.get("alt"); ok && openA >= 0 {
					anchor.writeString(alt)
				}
				if kinds&KindImg != 0 {
					if src, ok := a.get("src"); ok {
						s.add(rawLink{href: src, kind: KindImg})
					}
					if set, ok := a.get("srcset"); ok {
						eachSrcset(set, func(u string) { s.add(rawLink{href: u, kind: KindImg}) })
					}
				}
			case "link":
				a = z.attrs(a)
				href, ok := a.get("href")
				if !ok {
					continue
				}
				rel, _ := a.get("rel")
				if !s.hasCanonical && relHas(rel, "canonical") {
					s.canonical, s.hasCanonical = href, true
				}
				if kinds&KindLink != 0 {
					s.add(rawLink{href: href, kind: KindLink, nofollow: relHas(rel, "nofollow")})
				}
			case "iframe", "frame", "script":
				kind := KindIframe
				switch name {
				case "frame":
					kind = KindFrame
				case "script":
					kind = KindScript
				}
				if kinds&kind == 0 {
					continue
				}
				a = z.attrs(a)
				if src, ok := a.get("src"); ok {
					s.add(rawLink{href: src, kind: kind})
				}
			case "form":
				if kinds&KindForm == 0 {
					continue
				}
				a = z.attrs(a)
				method, _ := a.get("method")
				if action, ok := a.get("action"); ok && strings.TrimSpace(action) != "" && !strings.EqualFold(strings.TrimSpace(method), "post") {
					s.add(rawLink{href: action, kind: KindForm})
				}
			case "base":
				a = z.attrs(a)
				if href, ok := a.get("href"); ok && !s.hasBase {
					s.baseHref, s.hasBase = href, true
				}
			case "meta":
				a = z.attrs(a)
				s.meta(a, kinds)
			case "html":
				if !s.langSeen {
					a = z.attrs(a)
					if l, ok := a.get("lang"); ok {
						s.lang, s.langSeen = cleanLang(l), true
					}
				}
			case "h1", "h2", "h3", "h4", "h5", "h6":
				inHead = true
				heading.buf, heading.space = heading.buf[:0], false
			}
		}
	}
}

// meta reads robots directives, a refresh target and a language.
func (s *scanned) meta(a attrs, kinds Kind) {
	content, _ := a.get("content")
	if name, ok := a.get("name"); ok {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "robots", Agent:
			ni, nf := robotsDirectives(content, false)
			s.noindex, s.nofollow = s.noindex || ni, s.nofollow || nf
		}
		return
	}
	equiv, _ := a.get("http-equiv")
	switch strings.ToLower(strings.TrimSpace(equiv)) {
	case "refresh":
		if u, ok := refreshURL(content); ok && kinds&KindRefresh != 0 {
			s.add(rawLink{href: u, kind: KindRefresh})
		}
	case "content-language":
		if s.metaLang == "" {
			s.metaLang = cleanLang(content)
		}
	}
}

func (s *scanned) add(l rawLink) {
	if len(s.hrefs) >= maxHrefs {
		s.truncated = true
		return
	}
	l.textStart = s.text.Len()
	l.textEnd = l.textStart
	s.hrefs = append(s.hrefs, l)
}

// refreshURL reads the URL of a meta refresh's content, "5; url=target"
// and its variants ("0;URL='target'", "3, target"), after the HTML
// standard's shared declarative refresh steps.
func refreshURL(content string) (string, bool) {
	s := strings.TrimLeft(content, " \t\n\f\r")
	i := 0
	for i < len(s) && ('0' <= s[i] && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return "", false
	}
	s = strings.TrimLeft(s[i:], " \t\n\f\r")
	if s == "" || (s[0] != ';' && s[0] != ',') {
		return "", false
	}
	s = strings.TrimLeft(s[1:], " \t\n\f\r")
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		if rest := strings.TrimLeft(s[3:], " \t\n\f\r"); strings.HasPrefix(rest, "=") {
			s = strings.TrimLeft(rest[1:], " \t\n\f\r")
		}
	}
	if s != "" && (s[0] == '\'' || s[0] == '"') {
		q := s[0]
		s = s[1:]
		if j := strings.IndexByte(s, q); j >= 0 {
			s = s[:j]
		}
	}
	s = strings.TrimSpace(s)
	return s, s != ""
}

// eachSrcset calls f with each URL of a srcset attribute ("a.jpg 1x,
// b.jpg 2x", "c.jpg 480w"), after the HTML standard's srcset parsing: a URL
// runs to whitespace, a trailing comma ends a candidate, and descriptors run
// to a comma outside parentheses.
func eachSrcset(v string, f func(string)) {
	for i := 0; i < len(v); {
		for i < len(v) && (isSpace(v[i]) || v[i] == ',') {
			i++
		}
		start := i
		for i < len(v) && !isSpace(v[i]) {
			i++
		}
		u := v[start:i]
		if strings.HasSuffix(u, ",") {
			u = strings.TrimRight(u, ",")
		} else {
			for depth := 0; i < len(v); i++ {
				switch v[i] {
				case '(':
					depth++
				case ')':
					depth--
				case ',':
					if depth <= 0 {
						goto done
					}
				}
			}
		done:
		}
		if u != "" {
			f(u)
		}
	}
}
