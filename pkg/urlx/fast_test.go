package urlx

import (
	"net/url"
	"strings"
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

// hostRef is Host as it was before hostKey took "xn--" hosts: IsCanonical's
// scan, else net/url.
func hostRef(s string) (string, bool) {
	if h, ok := canonicalHostKey(s); ok {
		return h, true
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return u.Host, true
}

func checkHost(t *testing.T, s string) {
	got, err := Host(s)
	want, ok := hostRef(s)
	if got != want || (err == nil) != ok {
		t.Errorf("Host(%q) = %q, %v; net/url reads %q, %v", s, got, err, want, ok)
	}
}

// Host's scan, which takes "xn--" hosts, says what net/url says: on the
// canonical forms of the WPT vectors and of the mix, and on those inputs as
// they are.
func TestHostSameAsNetURL(t *testing.T) {
	var in []string
	for _, c := range loadWPT(t) {
		in = append(in, c.Input)
	}
	for _, p := range linkMix(16, 64) {
		in = append(in, p.hrefs...)
	}
	in = append(in, "http://xn--bcher-kva.example/", "https://a.xn--n3h.net:8443/p?q=%41", "http://xn--/",
		"http://XN--bcher-kva.example/", "http://xn--bcher-kva.example", "http://xn--bcher-kva.example:80/",
		"http://xn--bcher-kva.example/%zz", "http://xn--bcher-kva.example/a b", "http://xn--a.1/")
	ace := 0
	for _, s := range in {
		checkHost(t, s)
		if c, err := Canonicalize(s); err == nil {
			checkHost(t, c)
			if strings.Contains(c, acePrefix) {
				if _, ok := hostKey(c, true); ok {
					ace++
				}
			}
		}
	}
	if ace == 0 {
		t.Error("no canonical \"xn--\" URL took Host's scan")
	}
}

func FuzzHostSame(f *testing.F) {
	for _, s := range []string{"http://example.org/", "https://xn--bcher-kva.example:8443/p?q=%41", "http://1.2.3.4/%20",
		"http://xn--a.example/%7e", "http://xn--a.example/%zz", "http://xn--a.example:80/", "http://xn--a..b/", "http://a.xn--/x?y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkHost(t, s) })
}
