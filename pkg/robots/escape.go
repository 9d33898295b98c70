package robots

// Escaping patterns as robots.cc does: bytes outside ASCII %-encoded,
// existing %-escapes upper-cased.

// EscapePattern normalises a rule pattern the way robots.cc does before
// matching: bytes outside ASCII are %-encoded and existing %-escapes are
// upper-cased ("/á%aa" -> "/%C3%A1%AA"). Nothing is decoded.
func EscapePattern(pattern string) string {
	if !needsEscape(pattern) {
		return pattern
	}
	return string(appendEscaped(nil, []byte(pattern)))
}

func needsEscape[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) && (isLowerHex(s[i+1]) || isLowerHex(s[i+2])) {
			return true
		}
	}
	return false
}

func appendEscaped(dst, src []byte) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '%' && i+2 < len(src) && isHex(src[i+1]) && isHex(src[i+2]):
			dst = append(dst, '%', upperASCII(src[i+1]), upperASCII(src[i+2]))
			i += 2
		case c >= 0x80:
			dst = append(dst, '%', hex[c>>4], hex[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isLowerHex(c byte) bool { return c >= 'a' && c <= 'f' }

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
