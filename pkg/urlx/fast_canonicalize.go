package urlx

// fastCanonicalize, the fast path that canonicalizes an ordinary reference
// in one pass into one buffer: absolute URLs, the host and port, the path's
// segments, the query, and references relative to a base.

import "strings"

// fastCanonicalize is canonicalize for ordinary references: it returns the
// canonical URL and true, or false, having decided nothing, for anything it
// leaves to the full path (errors included). What it returns is always
// IsCanonical, or (relative to a base with an IDNA host) a URL whose host
// net/url was found to read as ours when the base was prepared: exactly
// the cases in which the full path returns its URL unchecked or checked and
// accepted.
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
	if i := strings.IndexByte(s, '#'); i >= 0 && strings.ContainsAny(s[i+1:], "\t\n\r") {
		return "", false
	}
	var arr [192]byte
	buf := arr[:0]
	var ok bool
	scheme, rest, hasScheme := splitScheme(s)
	switch {
	case hasScheme:
		switch {
		case strings.EqualFold(scheme, "http"):
			scheme = "http"
		case strings.EqualFold(scheme, "https"):
			scheme = "https"
		default:
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

// appendAbsolute appends the canonical form of "<authority><path>?<query>#<fragment>"
// of scheme when its host is a plain name.
func appendAbsolute(buf []byte, scheme, rest string) ([]byte, bool) {
	buf = append(buf, scheme...)
	buf = append(buf, "://"...)
	hostStart := len(buf)
	i := 0
	for ; i < len(rest); i++ {
		c := rest[i]
		if charClass[c]&cHostName == 0 {
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	for len(buf) > hostStart && buf[len(buf)-1] == '.' {
		buf = buf[:len(buf)-1]
	}
	if !fastHostName(buf[hostStart:]) {
		return buf, false
	}
	if i < len(rest) && rest[i] == ':' {
		j := i + 1
		for j < len(rest) && rest[j] != '/' && rest[j] != '?' && rest[j] != '#' {
			j++
		}
		var ok bool
		if buf, ok = appendPort(buf, scheme, rest[i+1:j]); !ok {
			return buf, false
		}
		i = j
	}
	rest = rest[i:]
	if rest != "" && rest[0] != '/' && rest[0] != '?' && rest[0] != '#' {
		return buf, false // '@', '%', '[', non-ASCII ... in the authority
	}
	pathStart := len(buf)
	p := 0
	for p < len(rest) && rest[p] != '?' && rest[p] != '#' {
		p++
	}
	if p == 0 {
		buf = append(buf, '/')
	} else {
		var ok bool
		if buf, _, ok = appendSegments(buf, pathStart, 0, rest[1:p]); !ok {
			return buf, false
		}
	}
	if p < len(rest) && rest[p] == '?' {
		return appendQuery(buf, rest[p+1:])
	}
	return buf, true
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
		} else if c == '-' && i >= 3 && h[i-1] == '-' && h[i-2] == 'n' && h[i-3] == 'x' {
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
// up to its query or fragment) to the canonical path begun at pathStart with
// n segments: each escape normalized (upper-case hex, unreserved characters
// decoded), what browsers escape escaped, and "." and ".." resolved as
// removeDots does. A path that is left with no segment is written "/". It
// declines bytes that canonicalPath would leave for net/url to judge
// ('\”, '[', ']', '|') or that clean and backslashes would change.
func appendSegments(buf []byte, pathStart, n int, p string) ([]byte, int, bool) {
	i := 0
	for {
		seg := len(buf)
		buf = append(buf, '/')
		for i < len(p) && p[i] != '/' {
			run := i
			for i < len(p) && charClass[p[i]]&cSegment != 0 {
				i++
			}
			buf = append(buf, p[run:i]...)
			if i == len(p) || p[i] == '/' {
				break
			}
			c := p[i]
			switch cls := charClass[c]; {
			case c == '%':
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
				return buf, n, false // tab, newline, '\\'
			case cls&cPathEscape != 0:
				buf = append(buf, '%', upperhex[c>>4], upperhex[c&15])
			default:
				return buf, n, false
			}
			i++
		}
		last := i >= len(p)
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
	return buf, n, true
}

// appendQuery appends '?' and q (up to a fragment) as escapeQuery leaves
// it, declining characters IsCanonical would refuse there and what clean
// would change.
func appendQuery(buf []byte, q string) ([]byte, bool) {
	buf = append(buf, '?')
	for i := 0; i < len(q); i++ {
		run := i
		for i < len(q) && charClass[q[i]]&cQuery != 0 {
			i++
		}
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
	pathStart := len(buf)
	p := 0
	for p < len(ref) && ref[p] != '?' && ref[p] != '#' {
		p++
	}
	if p == 0 { // the base's path, and its query unless ref has one
		if b.path == "" {
			buf = append(buf, '/')
		} else {
			buf = append(buf, b.path...)
		}
		switch {
		case p < len(ref) && ref[p] == '?':
			return appendQuery(buf, ref[p+1:])
		case b.hasQuery:
			buf = append(buf, '?')
			buf = append(buf, b.query...)
		}
		return buf, true
	}
	var ok bool
	if ref[0] == '/' {
		buf, _, ok = appendSegments(buf, pathStart, 0, ref[1:p])
	} else {
		buf = append(buf, b.dir...)
		buf, _, ok = appendSegments(buf, pathStart, b.dirSegments, ref[:p])
	}
	if !ok {
		return buf, false
	}
	if p < len(ref) && ref[p] == '?' {
		return appendQuery(buf, ref[p+1:])
	}
	return buf, true
}
