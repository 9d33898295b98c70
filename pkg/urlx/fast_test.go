package urlx

import (
	"testing"

	"github.com/trawlerhq/trawler/internal/linkstream"
)

// checkFast is the contract: IsCanonical(s) implies Canonicalize(s) == s.
func checkFast(t *testing.T, s string) bool {
	if !IsCanonical(s) {
		return false
	}
	if c, err := Canonicalize(s); err != nil || c != s {
		t.Errorf("IsCanonical(%q) but Canonicalize gives %q, %v", s, c, err)
	}
	return true
}

func TestIsCanonical(t *testing.T) {
	for _, s := range []string{
		"http://example.org/", "https://a.b-c.example/p/q?x=1&y=%2f", "http://127.0.0.1:8080/a%20b",
		"http://h1.example/p/456", "https://example.org/~user/(x)", "http://example.org/a:b@c",
	} {
		if !checkFast(t, s) {
			t.Errorf("IsCanonical(%q) = false, want true", s)
		}
	}
	for _, s := range []string{
		"HTTP://example.org/", "http://Example.org/", "http://example.org", "http://example.org:80/",
		"https://example.org:443/", "http://example.org/a/../b", "http://example.org/./", "http://example.org/%7Euser",
		"http://example.org/%2f", "http://example.org/#x", "http://example.org/a b", "http://0x7f.1/", "http://2130706433/",
		"http://127.000.0.1/", "http://xn--bcher-kva.example/", "http://example.org./", "ftp://example.org/",
		"http://user@example.org/", "http://example.org:0080/", "http://[::1]/", "http://example.org/\\x",
		"http://example.org/a'b", "http://example.org/?q=<x>", "http://256.1.1.1/",
	} {
		if checkFast(t, s) {
			t.Errorf("IsCanonical(%q) = true, want false", s)
		}
	}
}

// Every URL the link stream and the WPT vectors produce, canonicalized, is
// recognized as canonical, and nothing recognized is wrong.
func TestIsCanonicalOnRealShapes(t *testing.T) {
	ls := linkstream.New(linkstream.Options{Seed: 5})
	n, fast := 0, 0
	for p := 0; p < 2000; p++ {
		_, links := ls.NextPage()
		for _, l := range links {
			c, err := Canonicalize(l)
			if err != nil {
				continue
			}
			n++
			if checkFast(t, c) {
				fast++
			}
		}
	}
	if fast != n {
		t.Errorf("fast path took %d of %d canonical stream URLs, want all", fast, n)
	}
}

func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{"http://example.org/", "https://a.example:8443/p?q=%41", "http://1.2.3.4/%20", "http://a.example/%7e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFast(t, s)
		if c, err := Canonicalize(s); err == nil && len(c) < MaxLength {
			// A canonical URL usually takes the fast path; at least it must
			// never take it wrongly.
			checkFast(t, c)
		}
	})
}
