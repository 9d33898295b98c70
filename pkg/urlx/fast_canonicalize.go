package urlx

// fastCanonicalize, the fast path that canonicalizes an ordinary reference
// in one pass into one buffer: absolute URLs, the host and port, the path's
// segments, the query, and references relative to a base.

import "strings"

// fastCanonicalize is canonicalize for ordinary references: it returns the
// canonical URL and true, or false, having decided nothing, for anything it
// leaves to the full path (errors included). What it returns is always
// IsCanonical, or a URL whose path and query are IsCanonical's and whose
// host is a canonical one of lower-case LDH labels (such as "xn--" ones,
// from canonicalHost) or a base's host that net/url was found to read as
// ours when the base was prepared: exactly the cases in which the full
// path returns its URL unchecked, or checked by net/url and accepted.
func fastCanonicalize(base *baseURL, s string) (string, bool) {
	start, end := 0, len(s)
	for start < end && s[start] <= ' ' {
		start++
	}
	for end > start && s[end-1] <= ' ' {
		end--
	}
	s = s[start:end]
	if len(s) > MaxLength {
		return "", false
	}
	// Every byte before the fragment is looked at below, and tabs and
	// newlines declined (clean removes them, and then also replaces invalid
	// UTF-8); the fragment is not, so look at it here.
	frag := strings.IndexByte(s, '#')
	if frag >= 0 {
		for i := frag + 1; i < len(s); i++ {
			if c := s[i]; c == '\t' || c == '\n' || c == '\r' {
				return "", false
			}
		}
	}
	// An absolute URL already canonical, as most absolute links are, is
	// returned as it is after one scan, without copying it (IsCanonical(s)
	// means Canonicalize(s) == s, and an absolute "http://" URL does not
	// depend on the base).
	if frag < 0 && s != "" && s[0] == 'h' && IsCanonical(s) {
		return s, true
	}
	var arr [192]byte
	buf := arr[:0]
	var ok bool
	scheme, rest, hasScheme := splitScheme(s)
	switch {
	case hasScheme:
		if scheme = webSchemeFold(scheme); scheme == "" {
			return "", false // the full path makes the error
		}
		if base != nil && base.scheme == scheme && !strings.HasPrefix(rest, "//") {
			return "", false // "http:path", relative to an http base: rare
		}
		buf, ok = appendAbsolute(buf, scheme, strings.TrimLeft(rest, "/"))
	case base == nil:
		return "", false
	case strings.HasPrefix(s, "//"):
		buf, ok = appendAbsolute(buf, base.scheme, strings.TrimLeft(s, "/"))
	default:
		buf, ok = base.appendRelative(buf, s)
	}
	if !ok || len(buf) > MaxLength {
		return "", false
	}
	if string(buf) == s {
		return s, true // already canonical (absolute links often are): no copy
	}
	return string(buf), true
}

// webSchemeFold returns "http" or "https" when s is one of them in any
// case, else "". (A byte b has b|0x20 == 'h' only when b is 'h' or 'H', and
// so for the other letters.)
func webSchemeFold(s string) string {
	if len(s) < 4 || s[0]|0x20 != 'h' || s[1]|0x20 != 't' || s[2]|0x20 != 't' || s[3]|0x20 != 'p' {
		return ""
	}
	switch {
	case len(s) == 4:
		return "http"
	case len(s) == 5 && s[4]|0x20 == 's':
		return "https"
	}
	return ""
}

// appendAbsolute appends the canonical form of "<authority><path>?<query>#<fragment>"
// of scheme.
func appendAbsolute(buf []byte, scheme, rest string) ([]byte, bool) {
	buf = append(buf, scheme...)
	buf = append(buf, "://"...)
	// A plain host name is copied and lower-cased; any other host goes
	// through canonicalHost (appendOtherHost).
	hostStart := len(buf)
	i := span(rest, cHostName)
	buf = append(buf, rest[:i]...)
	h := buf[hostStart:]
	for j, c := range h {
		if 'A' <= c && c <= 'Z' {
			h[j] = c + 'a' - 'A'
		}
	}
	for len(h) > 0 && h[len(h)-1] == '.' {
		h = h[:len(h)-1]
	}
	buf = buf[:hostStart+len(h)]
	if plain := i == len(rest) || authorityEnd(rest[i]) || rest[i] == ':'; !plain || !fastHostName(h) {
		var ok bool
		if buf, i, ok = appendOtherHost(buf[:hostStart], rest); !ok {
			return buf, false
		}
	}
	if i < len(rest) && rest[i] == ':' {
		j := i + 1
		for j < len(rest) && !authorityEnd(rest[j]) {
			j++
		}
		var ok bool
		if buf, ok = appendPort(buf, scheme, rest[i+1:j]); !ok {
			return buf, false
		}
		i = j
	}
	rest = rest[i:]
	if rest != "" && !authorityEnd(rest[0]) {
		return buf, false // not expected: the host and port end at one of those
	}
	if rest != "" && rest[0] == '/' {
		var end int
		var ok bool
		if buf, _, end, ok = appendSegments(buf, len(buf), 0, rest[1:]); !ok {
			return buf, false
		}
		rest = rest[1+end:]
	} else {
		buf = append(buf, '/')
	}
	if rest != "" && rest[0] == '?' {
		return appendQuery(buf, rest[1:])
	}
	return buf, true
}

// authorityEnd reports whether c ends an authority: '/', '?', '#'.
func authorityEnd(c byte) bool { return c == '/' || c == '?' || c == '#' }

// appendOtherHost appends the canonical form of the host of rest (an
// authority, then the rest of the URL) when it is not a plain name:
// internationalized, "xn--", escaped, an IPv4 address in another notation.
// canonicalHost makes it, as on the full path (IDNA results are cached),
// and it returns where the host ends in rest. It declines what the full
// path reads otherwise (userinfo, IPv6, '\\', tabs and newlines), and
// canonical hosts with bytes other than lower-case LDH labels' and dots,
// whose URLs the full path has net/url check.
func appendOtherHost(buf []byte, rest string) ([]byte, int, bool) {
	end := 0
	for end < len(rest) && rest[end] != ':' && !authorityEnd(rest[end]) {
		if c := rest[end]; c <= ' ' || c == '@' || c == '[' || c == '\\' {
			return buf, 0, false
		}
		end++
	}
	h, err := canonicalHost(rest[:end])
	if err != nil {
		return buf, 0, false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; charClass[c]&cLowerHost == 0 && c != '.' {
			return buf, 0, false
		}
	}
	return append(buf, h...), end, true
}

// fastHostName accepts the lower-cased host names canonicalHost leaves as
// they are (ASCII, no "xn--", not ending in a number, DNS lengths) and that
// IsCanonical accepts.
func fastHostName(h []byte) bool {
	if len(h) == 0 || len(h) > maxDomain {
		return false
	}
	label := 0
	for i, c := range h {
		if c == '.' {
			if i == label || i-label > maxLabel {
				return false
			}
			label = i + 1
		} else if c == '-' && i-label >= 3 && h[i-1] == '-' && h[i-2] == 'n' && h[i-3] == 'x' {
			return false // "xn--": IDNA decides
		}
	}
	if len(h)-label > maxLabel {
		return false
	}
	if last := h[label:]; last[0] >= '0' && last[0] <= '9' {
		// Perhaps a number, so an IPv4 address: only a dotted quad as
		// canonicalIPv4 writes it is taken here.
		return dottedQuadBytes(h)
	}
	return true
}

// dottedQuadBytes is dottedQuad of a host in a buffer.
func dottedQuadBytes(h []byte) bool {
	parts, n, digits := 0, 0, 0
	for i := 0; i <= len(h); i++ {
		if i == len(h) || h[i] == '.' {
			if digits == 0 || n > 255 || digits > 1 && h[i-digits] == '0' {
				return false
			}
			parts++
			n, digits = 0, 0
			continue
		}
		c := h[i]
		if c < '0' || c > '9' || digits == 3 {
			return false
		}
		n = n*10 + int(c-'0')
		digits++
	}
	return parts == 4
}

// appendPort appends ":<port>" as canonicalPort writes it; it declines what
// canonicalPort refuses and port 0 (which IsCanonical refuses).
func appendPort(buf []byte, scheme, port string) ([]byte, bool) {
	if port == "" {
		return buf, true
	}
	i := 0
	for i < len(port) && port[i] == '0' {
		i++
	}
	digits := port[i:]
	if digits == "" || len(digits) > 5 {
		return buf, false
	}
	n := 0
	for j := 0; j < len(digits); j++ {
		c := digits[j]
		if c < '0' || c > '9' {
			return buf, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return buf, false
	}
	if n == defaultPort(scheme) {
		return buf, true
	}
	buf = append(buf, ':')
	return append(buf, digits...), true
}

// appendSegments appends the segments of p (a path without its first '/',
// up to its query or fragment, then those) to the canonical path begun at
// pathStart with n segments: each escape normalized (upper-case hex,
// unreserved characters decoded), what browsers escape escaped, and "." and
// ".." resolved as removeDots does. A path that is left with no segment is
// written "/". It returns the number of segments and where the path ends in
// p (at a '?', a '#' or the end). It declines bytes that canonicalPath would
// leave for net/url to judge (the quote, '[', ']', '|') or that clean and
// backslashes would change.
func appendSegments(buf []byte, pathStart, n int, p string) ([]byte, int, int, bool) {
	i := 0
	for {
		seg := len(buf)
		buf = append(buf, '/')
		last := false
		for {
			run := i
			i += span(p[i:], cSegment)
			buf = append(buf, p[run:i]...)
			if i == len(p) || p[i] == '?' || p[i] == '#' {
				last = true
				break
			}
			c := p[i]
			if c == '/' {
				break
			}
			switch cls := charClass[c]; {
			case c == '%':
				// '?' and '#' are not hex digits: no escape reaches past the path.
				if i+2 < len(p) && charClass[p[i+1]]&charClass[p[i+2]]&cHex != 0 {
					if d := unhex(p[i+1])<<4 | unhex(p[i+2]); charClass[d]&cUnreserved != 0 {
						buf = append(buf, d)
					} else {
						buf = append(buf, '%', upperhex[d>>4], upperhex[d&15])
					}
					i += 2
				} else {
					buf = append(buf, "%25"...)
				}
			case cls&cStop != 0:
				return buf, n, i, false // tab, newline, '\\'
			case cls&cPathEscape != 0:
				buf = append(buf, '%', upperhex[c>>4], upperhex[c&15])
			default:
				return buf, n, i, false
			}
			i++
		}
		switch s := buf[seg+1:]; {
		case len(s) == 1 && s[0] == '.':
			buf = buf[:seg]
			if last {
				buf = append(buf, '/')
				n++
			}
		case len(s) == 2 && s[0] == '.' && s[1] == '.':
			buf = buf[:seg]
			if n > 0 {
				for len(buf) > pathStart && buf[len(buf)-1] != '/' {
					buf = buf[:len(buf)-1]
				}
				buf = buf[:len(buf)-1]
				n--
			}
			if last {
				buf = append(buf, '/')
				n++
			}
		default:
			n++
		}
		if last {
			break
		}
		i++ // the '/'
	}
	if n == 0 {
		buf = append(buf, '/')
	}
	return buf, n, i, true
}

// appendQuery appends '?' and q (up to a fragment) as escapeQuery leaves
// it, declining characters IsCanonical would refuse there and what clean
// would change.
func appendQuery(buf []byte, q string) ([]byte, bool) {
	buf = append(buf, '?')
	for i := 0; i < len(q); i++ {
		run := i
		i += span(q[i:], cQuery)
		buf = append(buf, q[run:i]...)
		if i == len(q) {
			break
		}
		c := q[i]
		switch cls := charClass[c]; {
		case c == '#':
			return buf, true
		case c == '%':
			if i+2 < len(q) && charClass[q[i+1]]&charClass[q[i+2]]&cHex != 0 {
				buf = append(buf, q[i:i+3]...)
				i += 2
			} else {
				buf = append(buf, "%25"...)
			}
		case c == '\t' || c == '\n' || c == '\r':
			return buf, false
		case cls&cQueryEscape != 0:
			buf = append(buf, '%', upperhex[c>>4], upperhex[c&15])
		default:
			return buf, false
		}
	}
	return buf, true
}

// appendRelative appends the canonical form of ref, a reference with
// neither scheme nor authority, resolved against b (merge, then the
// canonical path and query).
func (b *baseURL) appendRelative(buf []byte, ref string) ([]byte, bool) {
	if !b.fast {
		return buf, false
	}
	buf = append(buf, b.scheme...)
	buf = append(buf, "://"...)
	buf = append(buf, b.hostport...)
	if ref == "" || ref[0] == '?' || ref[0] == '#' { // the base's path, and its query unless ref has one
		if b.path == "" {
			buf = append(buf, '/')
		} else {
			buf = append(buf, b.path...)
		}
		switch {
		case ref != "" && ref[0] == '?':
			return appendQuery(buf, ref[1:])
		case b.hasQuery:
			buf = append(buf, '?')
			buf = append(buf, b.query...)
		}
		return buf, true
	}
	pathStart := len(buf)
	var end int
	var ok bool
	if ref[0] == '/' {
		buf, _, end, ok = appendSegments(buf, pathStart, 0, ref[1:])
		end++
	} else {
		buf = append(buf, b.dir...)
		buf, _, end, ok = appendSegments(buf, pathStart, b.dirSegments, ref)
	}
	if !ok {
		return buf, false
	}
	if end < len(ref) && ref[end] == '?' {
		return appendQuery(buf, ref[end+1:])
	}
	return buf, true
}
