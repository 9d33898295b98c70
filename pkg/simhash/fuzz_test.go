package simhash

import (
	"strings"
	"testing"
)

// Page text comes from the web: any bytes fingerprint without a panic, the
// same way every time, and case does not matter.
func FuzzFingerprint(f *testing.F) {
	f.Add("the quick brown fox jumps over the lazy dog")
	f.Add("Ünïcode wörds ß \xff\xfe broken utf-8")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		fp := Fingerprint(text)
		if again := Fingerprint(text); again != fp {
			t.Fatalf("Fingerprint not deterministic: %#x then %#x", fp, again)
		}
		if strings.IndexFunc(text, func(r rune) bool { return r >= 0x80 }) < 0 {
			if up := Fingerprint(strings.ToUpper(text)); up != fp {
				t.Errorf("ASCII text and its upper case differ: %#x vs %#x", fp, up)
			}
		}
	})
}
