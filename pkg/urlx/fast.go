package urlx

import "strings"

// The fast paths: IsCanonical, which recognizes a canonical URL without
// parsing it, and fastCanonicalize, which canonicalizes the ordinary
// references pages are made of (absolute http(s) URLs, //host/path,
// /path, relative paths with ./ and ../, ?query, #fragment, with escapes,
// upper-case hosts and ports) in one pass into one buffer, without net/url
// and with one allocation, the result (none when the URL is canonical
// already). Hosts that are not plain names (IDNA, other IPv4 notations) it
// leaves to canonicalHost, as the full path does. Both decline what they do
// not handle — IPv6 hosts, userinfo, backslashes, tabs and newlines,
// characters whose handling net/url must confirm — and the full WHATWG
// path (canonicalizeFull) then decides. Differential fuzz tests hold them
// to that path's results.

// Byte classes, one table lookup each.
const (
	cUnreserved      = 1 << iota // ALPHA DIGIT - . _ ~
	cSafe                        // unreserved, sub-delims but '\'', ':', '@', '/' (stay as they are in a canonical path)
	cHex                         // 0-9 a-f A-F
	cPathEscape                  // escaped in a path (WHATWG path percent-encode set, DEL, non-ASCII)
	cQueryEscape                 // escaped in a query (special-query percent-encode set, DEL, non-ASCII)
	cHostName                    // letters, digits, '-', '_', '.': a plain host name, any case
	cStop                        // the end of a path: '?', '#'; tabs and newlines and '\\', which the fast path declines
	cLowerHost                   // a-z, 0-9, '-', '_': in a canonical host name
	cSegment                     // safe, but '/': copied as it is within a path segment
	cQuery                       // safe or '?': copied as it is in a query
	cForbiddenDomain             // WHATWG forbidden domain code points, and anything not ASCII (forbiddenInDomain)
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
		if c <= ' ' || c >= 0x7f || strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0 {
			t[i] |= cForbiddenDomain
		}
	}
	return t
}()

// span returns the length of the longest prefix of s whose bytes all are of
// class cls (one class). It looks at four bytes a step: their table
// lookups are independent, so the CPU overlaps them, and the loop takes one
// branch per four bytes instead of one per byte.
func span(s string, cls uint16) int {
	i := 0
	for ; len(s)-i >= 4; i += 4 {
		t := s[i : i+4]
		if charClass[t[0]]&charClass[t[1]]&charClass[t[2]]&charClass[t[3]]&cls == 0 {
			break
		}
	}
	for i < len(s) && charClass[s[i]]&cls != 0 {
		i++
	}
	return i
}

// safeChar: unreserved, sub-delims (but '\”), ':', '@' and '/'.
func safeChar(c byte) bool { return charClass[c]&cSafe != 0 }

func unreservedByte(c byte) bool { return charClass[c]&cUnreserved != 0 }

func upperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }
