package urlx

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
)

// canonicalHostPort canonicalizes an authority: userinfo dropped, host
// canonical, default port dropped.
func canonicalHostPort(scheme, authority string) (string, error) {
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	host, port, hasPort := authority, "", false
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", invalid("unclosed '[' in host")
		}
		host = authority[:end+1]
		if rest := authority[end+1:]; rest != "" {
			if rest[0] != ':' {
				return "", invalid("junk after IPv6 address")
			}
			port, hasPort = rest[1:], true
		}
	} else if i := strings.IndexByte(authority, ':'); i >= 0 {
		host, port, hasPort = authority[:i], authority[i+1:], true
	}
	h, err := canonicalHost(host)
	if err != nil {
		return "", err
	}
	if !hasPort {
		return h, nil
	}
	p, err := canonicalPort(scheme, port)
	if err != nil {
		return "", err
	}
	return h + p, nil
}

// canonicalPort returns ":<port>" without leading zeros, or "" for an empty
// or default port.
func canonicalPort(scheme, port string) (string, error) {
	if port == "" { // "host:" means no port
		return "", nil
	}
	if !allDigits(port, 10) {
		return "", invalid("port is not a number")
	}
	port = strings.TrimLeft(port, "0")
	if len(port) > 5 {
		return "", invalid("port out of range")
	}
	n := 0
	if port != "" {
		n, _ = strconv.Atoi(port)
	}
	if n > 65535 {
		return "", invalid("port out of range")
	}
	if n == defaultPort(scheme) {
		return "", nil
	}
	return ":" + strconv.Itoa(n), nil
}

func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

// canonicalHost canonicalizes a host the way the WHATWG host parser does,
// then drops trailing dots.
func canonicalHost(h string) (string, error) {
	if h == "" {
		return "", invalid("empty host")
	}
	if h[0] == '[' {
		if h[len(h)-1] != ']' {
			return "", invalid("bad IPv6 address")
		}
		return canonicalIPv6(h[1 : len(h)-1])
	}
	h, err := toASCII(percentDecode(h))
	if err != nil {
		return "", err
	}
	for _, c := range []byte(h) {
		if forbiddenInDomain(c) {
			return "", invalid("forbidden character %q in host", c)
		}
	}
	h = strings.TrimRight(h, ".")
	if h == "" {
		return "", invalid("empty host")
	}
	if endsInNumber(h) {
		return canonicalIPv4(h)
	}
	return h, checkDNSLength(h)
}

// checkDNSLength refuses names DNS cannot carry (empty or long labels, long
// names): no server can be reached under them, and the bound keeps
// Punycode work small.
func checkDNSLength(h string) error {
	if len(h) > maxDomain {
		return invalid("host name longer than %d bytes", maxDomain)
	}
	for l := range strings.SplitSeq(h, ".") {
		if l == "" || len(l) > maxLabel {
			return invalid("host name has an empty or long label")
		}
	}
	return nil
}

// toASCII applies IDNA (idna.go), skipping it for plain ASCII names with no
// ACE label.
func toASCII(h string) (string, error) {
	if isASCII(h) {
		if l := strings.ToLower(h); !strings.Contains(l, acePrefix) {
			return l, nil
		}
	}
	return cachedIDNAToASCII(h)
}

// idnaCache remembers what idnaToASCII made of host names (1 to 2 µs each,
// and the internationalized hosts of a crawl repeat, above all those of the
// page being parsed): at most idnaCacheSize names of at most
// idnaCacheKeyMax bytes, all forgotten when it is full.
var idnaCache struct {
	sync.RWMutex
	m map[string]idnaResult
}

const (
	idnaCacheSize   = 4096
	idnaCacheKeyMax = 256
)

type idnaResult struct {
	ascii string
	err   error
}

func cachedIDNAToASCII(h string) (string, error) {
	if len(h) > idnaCacheKeyMax {
		return idnaToASCII(h)
	}
	idnaCache.RLock()
	r, ok := idnaCache.m[h]
	idnaCache.RUnlock()
	if ok {
		return r.ascii, r.err
	}
	r.ascii, r.err = idnaToASCII(h)
	idnaCache.Lock()
	if len(idnaCache.m) >= idnaCacheSize || idnaCache.m == nil {
		idnaCache.m = make(map[string]idnaResult, 64)
	}
	idnaCache.m[strings.Clone(h)] = r
	idnaCache.Unlock()
	return r.ascii, r.err
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// forbiddenInDomain is the WHATWG forbidden domain code point set (for the
// ASCII result of IDNA), plus anything not ASCII.
func forbiddenInDomain(c byte) bool { return charClass[c]&cForbiddenDomain != 0 }

// endsInNumber reports whether the last label is a number, in which case
// the host must be an IPv4 address (WHATWG).
func endsInNumber(h string) bool {
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last == "" {
		return false
	}
	if allDigits(last, 10) {
		return true
	}
	hex := len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')
	return hex && (len(last) == 2 || allDigits(last[2:], 16)) // "0x" is 0
}

// canonicalIPv4 parses the WHATWG IPv4 notations (1 to 4 parts, each
// decimal, octal with a leading 0, or hex with 0x; the last part fills the
// remaining bytes) and writes dotted decimal.
func canonicalIPv4(h string) (string, error) {
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return "", invalid("bad IPv4 address")
	}
	var addr uint64
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return "", invalid("bad IPv4 address")
		}
		if i < len(parts)-1 {
			if n > 255 {
				return "", invalid("bad IPv4 address")
			}
			addr |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return "", invalid("bad IPv4 address")
		}
		addr |= n
	}
	var b [4]byte
	for i := range b {
		b[i] = byte(addr >> (8 * (3 - i)))
	}
	return netip.AddrFrom4(b).String(), nil
}

func ipv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	}
	if !allDigits(p, base) {
		return 0, false
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil { // overflow: too big for any part anyway
		return 0, false
	}
	return n, true
}

func allDigits(s string, base int) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		var ok bool
		switch base {
		case 8:
			ok = '0' <= c && c <= '7'
		case 10:
			ok = '0' <= c && c <= '9'
		default:
			ok = ishex(c)
		}
		if !ok {
			return false
		}
	}
	return true
}

// canonicalIPv6 parses an IPv6 address (no zone) and writes it the WHATWG
// way: lowercase hex, the first longest run of two or more zero pieces
// compressed, no embedded IPv4 notation.
func canonicalIPv6(s string) (string, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return "", invalid("bad IPv6 address")
	}
	b := a.As16()
	var pieces [8]uint16
	for i := range pieces {
		pieces[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	compress, best := -1, 1
	for i := 0; i < 8; {
		j := i
		for j < 8 && pieces[j] == 0 {
			j++
		}
		if j-i > best {
			compress, best = i, j-i
		}
		i = j + 1
	}
	var out strings.Builder
	out.WriteByte('[')
	for i := 0; i < 8; i++ {
		if i == compress {
			if i == 0 {
				out.WriteString("::")
			} else {
				out.WriteByte(':')
			}
			i += best - 1
			continue
		}
		out.WriteString(strconv.FormatUint(uint64(pieces[i]), 16))
		if i != 7 {
			out.WriteByte(':')
		}
	}
	out.WriteByte(']')
	return out.String(), nil
}
