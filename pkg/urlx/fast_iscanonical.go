package urlx

// IsCanonical, the fast path that recognizes a canonical URL without
// parsing it (and returns its host key), with its checks of host, port,
// path and query.

import "strings"

// IsCanonical reports, cheaply and conservatively, whether s is already in
// the canonical form Canonicalize produces: when it says true,
// Canonicalize(s) == s (a fuzz test holds it to that). It says false for
// anything unusual — IDNA labels, numeric hosts other than plain dotted
// quads, escapes of unreserved characters, dot segments — and the caller
// then canonicalizes in full. Dedup uses it to skip re-parsing the URLs that
// parsers already canonicalized, which is nearly all of them.
func IsCanonical(s string) bool {
	_, ok := canonicalHostKey(s)
	return ok
}

// canonicalHostKey is IsCanonical, returning as well the host key of s
// (its host and port) when it is canonical.
func canonicalHostKey(s string) (string, bool) { return hostKey(s, false) }

// hostKey is canonicalHostKey; with ace, it also takes hosts with "xn--"
// labels. Those are not known to be canonical (the full path checks their
// Punycode), but net/url reads such a URL's host as it is written, which
// is all Host needs.
func hostKey(s string, ace bool) (string, bool) {
	var i int
	var defaultPort string
	switch {
	case strings.HasPrefix(s, "http://"):
		i, defaultPort = len("http://"), "80"
	case strings.HasPrefix(s, "https://"):
		i, defaultPort = len("https://"), "443"
	default:
		return "", false
	}
	if len(s) > MaxLength {
		return "", false
	}
	// The host: lower-case LDH labels, no "xn--" (plainHost, in one pass).
	start, label := i, i
	for {
		label = i
		i += span(s[i:], cLowerHost)
		if i == label || i-label > maxLabel {
			return "", false // empty (or ends with a dot), long
		}
		if i == len(s) || s[i] != '.' {
			break
		}
		i++
	}
	host := s[start:i]
	if len(host) > maxDomain || !ace && strings.Contains(host, acePrefix) {
		return "", false
	}
	if last := s[label:i]; decimalDigits(last) || strings.HasPrefix(last, "0x") {
		if !dottedQuad(host) {
			return "", false
		}
	}
	if i < len(s) && s[i] == ':' {
		j := i + 1
		for j < len(s) && s[j] != '/' {
			j++
		}
		if !plainPort(s[i+1:j], defaultPort) {
			return "", false
		}
		i = j
	}
	if i == len(s) {
		return "", false // canonical URLs always have a path
	}
	if !plainPathQuery(s[i:]) { // and the host ends at its '/'
		return "", false
	}
	return s[start:i], true
}

// plainPathQuery is plainPath of what precedes the first '?' and plainQuery
// of what follows it, in one pass.
func plainPathQuery(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	seg := 1 // start of the current segment
	i := 1
	for {
		i += span(p[i:], cSegment)
		if i == len(p) {
			return !isDotSegment(p[seg:])
		}
		c := p[i]
		if c == '/' || c == '?' {
			if i-seg <= 2 && isDotSegment(p[seg:i]) {
				return false
			}
			if c == '?' {
				return plainQuery(p[i+1:])
			}
			i++
			seg = i
			continue
		}
		if c != '%' || i+2 >= len(p) || !upperHex(p[i+1]) || !upperHex(p[i+2]) ||
			unreservedByte(unhex(p[i+1])<<4|unhex(p[i+2])) {
			return false // not a canonical escape
		}
		i += 3
	}
}

// plainHost accepts lower-case LDH labels, or a dotted quad without leading
// zeros; no IDNA labels (their decoding is checked by the full path).
func plainHost(h string) bool {
	if h == "" || len(h) > maxDomain {
		return false
	}
	label := 0 // start of the current label
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c == '.':
			if i == label || i-label > maxLabel {
				return false
			}
			label = i + 1
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_':
		default:
			return false
		}
	}
	if label == len(h) || len(h)-label > maxLabel || strings.Contains(h, acePrefix) {
		return false
	}
	if last := h[label:]; decimalDigits(last) || strings.HasPrefix(last, "0x") {
		return dottedQuad(h)
	}
	return true
}

func dottedQuad(h string) bool {
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

func plainPort(p, defaultPort string) bool {
	if p == "" || len(p) > 5 || !decimalDigits(p) || p[0] == '0' || p == defaultPort {
		return false
	}
	return len(p) < 5 || p <= "65535"
}

func decimalDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// plainPath accepts a path of safe characters and upper-case escapes of
// characters that must stay escaped, without dot segments.
func plainPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	seg := 1 // start of the current segment
	for i := 1; i < len(p); i++ {
		c := p[i]
		if charClass[c]&cSegment != 0 {
			continue
		}
		switch c {
		case '/':
			if i-seg <= 2 && isDotSegment(p[seg:i]) {
				return false
			}
			seg = i + 1
		case '%':
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
	return !isDotSegment(p[seg:])
}

func isDotSegment(s string) bool { return s == "." || s == ".." }

// plainQuery accepts safe characters, '?' and well-formed escapes of any
// case (the query is kept as written).
func plainQuery(q string) bool {
	for i := 0; ; i += 3 {
		i += span(q[i:], cQuery)
		if i == len(q) {
			return true
		}
		if q[i] != '%' || i+2 >= len(q) || !ishex(q[i+1]) || !ishex(q[i+2]) {
			return false
		}
	}
}
