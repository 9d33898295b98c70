package urlx

import "strings"

// The first IsCanonical, kept as the reference its faster successor is
// compared with (FuzzIsCanonicalSame).

func isCanonicalRef(s string) bool {
	var rest string
	var defaultPort string
	switch {
	case strings.HasPrefix(s, "http://"):
		rest, defaultPort = s[len("http://"):], "80"
	case strings.HasPrefix(s, "https://"):
		rest, defaultPort = s[len("https://"):], "443"
	default:
		return false
	}
	if len(s) > MaxLength {
		return false
	}
	end := strings.IndexByte(rest, '/')
	if end < 0 {
		return false // canonical URLs always have a path
	}
	authority, pathQuery := rest[:end], rest[end:]
	host, port, hasPort := strings.Cut(authority, ":")
	if !plainHostRef(host) || (hasPort && !plainPortRef(port, defaultPort)) {
		return false
	}
	path, query, hasQuery := strings.Cut(pathQuery, "?")
	return plainPathRef(path) && (!hasQuery || plainQueryRef(query))
}

// plainHost accepts lower-case LDH labels, or a dotted quad without leading
// zeros; no IDNA labels (their decoding is checked by the full path).
func plainHostRef(h string) bool {
	if h == "" || len(h) > maxDomain || h[0] == '.' || h[len(h)-1] == '.' || strings.Contains(h, "..") || strings.Contains(h, "xn--") {
		return false
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if decimalDigits(last) || strings.HasPrefix(last, "0x") {
		return dottedQuadRef(h)
	}
	for l := range strings.SplitSeq(h, ".") {
		if len(l) > maxLabel {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func dottedQuadRef(h string) bool {
	n := 0
	for l := range strings.SplitSeq(h, ".") {
		if n++; l == "" || len(l) > 3 || !decimalDigits(l) || (len(l) > 1 && l[0] == '0') {
			return false
		}
		if len(l) == 3 && l > "255" {
			return false
		}
	}
	return n == 4
}

func plainPortRef(p, defaultPort string) bool {
	if p == "" || len(p) > 5 || !decimalDigits(p) || p[0] == '0' || p == defaultPort {
		return false
	}
	return len(p) < 5 || p <= "65535"
}

// plainPath accepts a path of safe characters and upper-case escapes of
// characters that must stay escaped, without dot segments.
func plainPathRef(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case safeCharRef(c):
		case c == '%':
			if i+2 >= len(p) || !upperHex(p[i+1]) || !upperHex(p[i+2]) {
				return false
			}
			if unreservedByte(unhex(p[i+1])<<4 | unhex(p[i+2])) {
				return false // would be decoded
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

// plainQuery accepts safe characters, '?' and well-formed escapes of any
// case (the query is kept as written).
func plainQueryRef(q string) bool {
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case safeCharRef(c) || c == '?':
		case c == '%':
			if i+2 >= len(q) || !ishex(q[i+1]) || !ishex(q[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

// safeChar: unreserved, sub-delims (but '\”), ':', '@' and '/'.
func safeCharRef(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("-._~!$&()*+,;=:@/", c) >= 0
}
