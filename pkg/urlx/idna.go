package urlx

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Internationalized host names.
//
// golang.org/x/net/idna was measured against the WHATWG vectors in
// shared/conformance and loses to this file: it rejects valid "xn--" hosts of
// compatibility characters, accepts hosts of invalid UTF-8 (mapping them to
// U+FFFD) and leaves 11 must-parse vectors unparsed to our 5. So this file
// implements the
// part of UTS #46 "ToASCII" (non-transitional, no STD3 rules, no hyphen
// rules, DNS lengths checked) that host names in links need:
//
//   - ideographic and fullwidth full stops separate labels;
//   - fullwidth ASCII maps to ASCII; letters are lowercased (simple case
//     mapping); default-ignorable joiners and variation selectors vanish;
//   - controls, spaces, U+FFFD, unassigned and other non-graphic runes are
//     refused;
//   - non-ASCII labels are Punycode-encoded (RFC 3492) with the "xn--" prefix;
//   - "xn--" labels must decode to a non-ASCII label that is already mapped
//     and must re-encode to themselves, which keeps canonical hosts stable.
//
// Not covered, for lack of Unicode tables: NFC normalization, the full
// UTS #46 mapping table (compatibility forms other than fullwidth ASCII,
// special case foldings), the Bidi rule and the CONTEXTJ rules. A host that
// needs them canonicalizes to a name browsers would not use, so its fetch
// fails; it never panics or aliases another host.

const (
	acePrefix = "xn--"
	maxLabel  = 63  // bytes of one DNS label
	maxDomain = 253 // bytes of a DNS name without the root dot
)

var errPunycode = errors.New("bad punycode")

// idnaToASCII converts a host name that is not plain ASCII, or holds an
// "xn--" label, to its ASCII form.
func idnaToASCII(h string) (string, error) {
	mapped, err := mapHost(h)
	if err != nil {
		return "", err
	}
	labels := strings.Split(mapped, ".")
	for i, l := range labels {
		if labels[i], err = labelToASCII(l); err != nil {
			return "", err
		}
	}
	return strings.Join(labels, "."), nil
}

func labelToASCII(l string) (string, error) {
	if isASCII(l) {
		if strings.HasPrefix(l, acePrefix) {
			return l, checkACE(l)
		}
		return l, nil
	}
	if utf8.RuneCountInString(l) > maxLabel {
		return "", invalid("host label too long")
	}
	a, err := punyEncode([]rune(l))
	if err != nil {
		return "", invalid("host: %v", err)
	}
	return acePrefix + a, nil
}

// checkACE accepts an "xn--" label only if it is exactly what labelToASCII
// makes of its decoded form.
func checkACE(l string) error {
	if len(l) > maxLabel {
		return invalid("host label too long")
	}
	u, err := punyDecode(l[len(acePrefix):])
	if err != nil || isASCII(string(u)) {
		return invalid("host: bad punycode label")
	}
	if m, err := mapHost(string(u)); err != nil || m != string(u) {
		return invalid("host: punycode label is not in mapped form")
	}
	if a, err := punyEncode(u); err != nil || acePrefix+a != l {
		return invalid("host: punycode label is not canonical")
	}
	return nil
}

// mapHost applies the mapping subset described above to a whole host and
// lowercases ASCII letters.
func mapHost(h string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(h); {
		r, size := utf8.DecodeRuneInString(h[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			return "", invalid("host is not UTF-8")
		case r < utf8.RuneSelf:
			b.WriteByte(byte(unicode.ToLower(r)))
		case r == '\u3002' || r == '\uff0e' || r == '\uff61':
			b.WriteByte('.')
		case '\uff01' <= r && r <= '\uff5e': // fullwidth ASCII
			b.WriteByte(byte(unicode.ToLower(r - 0xfee0)))
		case ignorable(r):
		case !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == utf8.RuneError:
			return "", invalid("character %U not allowed in host", r)
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String(), nil
}

// ignorable runes are mapped to nothing by UTS #46.
func ignorable(r rune) bool {
	switch {
	case r == '\u00ad', r == '\u034f', r == '\u200b', r == '\u2060', r == '\ufeff':
		return true
	case '\u180b' <= r && r <= '\u180d', '\ufe00' <= r && r <= '\ufe0f':
		return true
	}
	return false
}

// Punycode, RFC 3492.
const (
	pBase        = 36
	pTMin        = 1
	pTMax        = 26
	pSkew        = 38
	pDamp        = 700
	pInitialBias = 72
	pInitialN    = 128
	pMaxInt      = 1<<31 - 1
)

func punyEncode(input []rune) (string, error) {
	var out []byte
	for _, r := range input {
		if r < 0x80 {
			out = append(out, byte(r))
		}
	}
	b := len(out)
	h := b
	if b > 0 {
		out = append(out, '-')
	}
	n, delta, bias := pInitialN, 0, pInitialBias
	for h < len(input) {
		m := pMaxInt
		for _, r := range input {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		if (m - n) > (pMaxInt-delta)/(h+1) {
			return "", errPunycode
		}
		delta += (m - n) * (h + 1)
		n = m
		for _, r := range input {
			if int(r) < n {
				if delta++; delta == pMaxInt {
					return "", errPunycode
				}
			}
			if int(r) != n {
				continue
			}
			q := delta
			for k := pBase; ; k += pBase {
				t := threshold(k, bias)
				if q < t {
					break
				}
				out = append(out, punyDigit(t+(q-t)%(pBase-t)))
				q = (q - t) / (pBase - t)
			}
			out = append(out, punyDigit(q))
			bias = adapt(delta, h+1, h == b)
			delta = 0
			h++
		}
		delta++
		n++
	}
	return string(out), nil
}

func punyDecode(s string) ([]rune, error) {
	var out []rune
	pos := 0
	if i := strings.LastIndexByte(s, '-'); i > 0 {
		for _, c := range []byte(s[:i]) {
			if c >= 0x80 {
				return nil, errPunycode
			}
			out = append(out, rune(c))
		}
		pos = i + 1
	}
	n, i, bias := pInitialN, 0, pInitialBias
	for pos < len(s) {
		oldi, w := i, 1
		for k := pBase; ; k += pBase {
			if pos >= len(s) {
				return nil, errPunycode
			}
			d, ok := punyValue(s[pos])
			pos++
			if !ok || d > (pMaxInt-i)/w {
				return nil, errPunycode
			}
			i += d * w
			t := threshold(k, bias)
			if d < t {
				break
			}
			if w > pMaxInt/(pBase-t) {
				return nil, errPunycode
			}
			w *= pBase - t
		}
		size := len(out) + 1
		bias = adapt(i-oldi, size, oldi == 0)
		if i/size > pMaxInt-n {
			return nil, errPunycode
		}
		n += i / size
		i %= size
		if n < 0x80 || n > unicode.MaxRune || 0xd800 <= n && n <= 0xdfff {
			return nil, errPunycode
		}
		out = append(out, 0)
		copy(out[i+1:], out[i:])
		out[i] = rune(n)
		i++
	}
	return out, nil
}

func threshold(k, bias int) int {
	switch {
	case k <= bias:
		return pTMin
	case k >= bias+pTMax:
		return pTMax
	}
	return k - bias
}

func adapt(delta, numPoints int, first bool) int {
	if first {
		delta /= pDamp
	} else {
		delta /= 2
	}
	delta += delta / numPoints
	k := 0
	for delta > ((pBase-pTMin)*pTMax)/2 {
		delta /= pBase - pTMin
		k += pBase
	}
	return k + (pBase-pTMin+1)*delta/(delta+pSkew)
}

func punyDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}

func punyValue(c byte) (int, bool) {
	switch {
	case '0' <= c && c <= '9':
		return int(c-'0') + 26, true
	case 'a' <= c && c <= 'z':
		return int(c - 'a'), true
	case 'A' <= c && c <= 'Z':
		return int(c - 'A'), true
	}
	return 0, false
}
