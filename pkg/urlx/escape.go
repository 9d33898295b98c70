package urlx

import "strings"

const upperhex = "0123456789ABCDEF"

// canonicalPath normalizes percent-encoding, then resolves dot segments (in
// that order, so %2E%2E counts as "..", as RFC 3986 section 6.2.2 and
// browsers have it).
func canonicalPath(p string) string {
	if p == "" {
		return "/"
	}
	return removeDots(normalizePath(p))
}

// normalizePath upper-cases escapes, decodes escaped unreserved characters,
// escapes a '%' that starts no escape, and escapes what browsers escape in a
// path (the WHATWG path percent-encode set, DEL and non-ASCII bytes).
func normalizePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%' && validEscape(p, i):
			if d := unhex(p[i+1])<<4 | unhex(p[i+2]); unreserved(d) {
				b.WriteByte(d)
			} else {
				writeEscape(&b, d)
			}
			i += 2
		case c == '%' || escapeInPath(c):
			writeEscape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escapeQuery escapes only what may not stand in a query (what browsers
// escape for http(s): the special-query percent-encode set, DEL, non-ASCII)
// and a '%' that starts no escape; existing escapes stay as they are.
func escapeQuery(q string) string {
	clean := true
	for i := 0; i < len(q) && clean; i++ {
		clean = !escapeInQuery(q[i]) && (q[i] != '%' || validEscape(q, i))
	}
	if clean {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if escapeInQuery(c) || c == '%' && !validEscape(q, i) {
			writeEscape(&b, c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// removeDots resolves "." and ".." segments of an absolute path the way
// browsers do: ".." stops at the root, a final "." or ".." leaves a "/".
func removeDots(p string) string {
	if !strings.Contains(p, "/.") {
		return p
	}
	segs := strings.Split(p[1:], "/")
	out := segs[:0]
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		case ".":
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// percentDecode decodes every valid escape and leaves other bytes alone.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && validEscape(s, i) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func writeEscape(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperhex[c>>4])
	b.WriteByte(upperhex[c&15])
}

func validEscape(s string, i int) bool {
	return i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2])
}

// controlOrSpace covers the C0 control percent-encode set plus space.
func controlOrSpace(c byte) bool { return c <= ' ' || c >= 0x7f }

func escapeInPath(c byte) bool {
	return controlOrSpace(c) || strings.IndexByte("\"#<>?^`{}", c) >= 0
}

func escapeInQuery(c byte) bool {
	return controlOrSpace(c) || strings.IndexByte("\"#<>'", c) >= 0
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
