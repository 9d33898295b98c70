package urlx

import (
	"strings"
)

// The fast paths: IsCanonical, which recognizes a canonical URL without
// parsing it, and fastCanonicalize, which canonicalizes the ordinary
// references pages are made of (absolute http(s) URLs, //host/path,
// /path, relative paths with ./ and ../, ?query, #fragment, with escapes,
// upper-case hosts and ports) in one pass into one buffer, without net/url
// and with one allocation, the result. Both decline what they do not
// handle — IDNA, numeric and IPv6 hosts, userinfo, backslashes, tabs and
// newlines, characters whose handling net/url must confirm — and the full
// WHATWG path (canonicalizeFull) then decides. Differential fuzz tests hold
// them to that path's results.

// Byte classes, one table lookup each.
const (
	cUnreserved  = 1 << iota // ALPHA DIGIT - . _ ~
	cSafe                    // unreserved, sub-delims but '\'', ':', '@', '/' (stay as they are in a canonical path)
	cHex                     // 0-9 a-f A-F
	cPathEscape              // escaped in a path (WHATWG path percent-encode set, DEL, non-ASCII)
	cQueryEscape             // escaped in a query (special-query percent-encode set, DEL, non-ASCII)
	cHostName                // letters, digits, '-', '_', '.': a plain host name, any case
	cStop                    // the end of a path: '?', '#'; tabs and newlines and '\\', which the fast path declines
	cLowerHost               // a-z, 0-9, '-', '_': in a canonical host name
	cSegment                 // safe, but '/': copied as it is within a path segment
	cQuery                   // safe or '?': copied as it is in a query
)

var charClass = func() (t [256]uint16) {
	for i := range t {
		c := byte(i)
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if alnum || strings.IndexByte("-._~", c) >= 0 {
			t[i] |= cUnreserved | cSafe
		}
		if strings.IndexByte("!$&()*+,;=:@/", c) >= 0 {
			t[i] |= cSafe
		}
		if '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' {
			t[i] |= cHex
		}
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"#<>?^`{}", c) >= 0 {
			t[i] |= cPathEscape
		}
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"#<>'", c) >= 0 {
			t[i] |= cQueryEscape
		}
		if alnum || c == '-' || c == '_' || c == '.' {
			t[i] |= cHostName
		}
		if strings.IndexByte("?#\t\n\r\\", c) >= 0 {
			t[i] |= cStop
		}
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			t[i] |= cLowerHost
		}
		if t[i]&cSafe != 0 && c != '/' {
			t[i] |= cSegment
		}
		if t[i]&cSafe != 0 || c == '?' {
			t[i] |= cQuery
		}
	}
	return t
}()

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
func canonicalHostKey(s string) (string, bool) {
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
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if i == label || i-label > maxLabel {
				return "", false
			}
			label = i + 1
			continue
		}
		if charClass[c]&cLowerHost == 0 {
			if c == '/' || c == ':' {
				break
			}
			return "", false
		}
		if c == '-' && i-label >= 3 && s[i-1] == '-' && s[i-2] == 'n' && s[i-3] == 'x' {
			return "", false
		}
	}
	host := s[start:i]
	if i == label || i-label > maxLabel || len(host) > maxDomain {
		return "", false // empty, ends with a dot, long
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
	if !plainPathQuery(s[i:]) {
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
	for ; i < len(p); i++ {
		c := p[i]
		if charClass[c]&cSegment != 0 {
			continue
		}
		if c == '/' || c == '?' {
			if i-seg <= 2 && isDotSegment(p[seg:i]) {
				return false
			}
			if c == '?' {
				break
			}
			seg = i + 1
			continue
		}
		if c != '%' || i+2 >= len(p) || !upperHex(p[i+1]) || !upperHex(p[i+2]) ||
			unreservedByte(unhex(p[i+1])<<4|unhex(p[i+2])) {
			return false // not a canonical escape
		}
		i += 2
	}
	if i == len(p) {
		return !isDotSegment(p[seg:])
	}
	return plainQuery(p[i+1:])
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
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case charClass[c]&cQuery != 0:
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
func safeChar(c byte) bool { return charClass[c]&cSafe != 0 }

func unreservedByte(c byte) bool { return charClass[c]&cUnreserved != 0 }

func upperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

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
