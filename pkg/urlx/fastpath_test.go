package urlx

import (
	"net/url"
	"testing"
)

// The byte classes agree with the predicates the full path uses.
func TestCharClass(t *testing.T) {
	for i := 0; i < 256; i++ {
		c := byte(i)
		for _, k := range []struct {
			name  string
			class uint16
			want  bool
		}{
			{"unreserved", cUnreserved, unreserved(c)},
			{"safe", cSafe, safeCharRef(c)},
			{"hex", cHex, ishex(c)},
			{"path escape", cPathEscape, escapeInPath(c)},
			{"query escape", cQueryEscape, escapeInQuery(c)},
		} {
			if got := charClass[c]&k.class != 0; got != k.want {
				t.Errorf("byte %#x: %s class %v, predicate %v", c, k.name, got, k.want)
			}
		}
	}
}

// fuzzBases are the bases the differential tests resolve against: plain
// ones, and each kind the fast path must treat with care.
var fuzzBases = []string{
	"http://example.com/dir/page?x#f",
	"https://www.example.com/",
	"https://Example.COM:443/a/b/c/",
	"http://example.com",
	"http://example.com:8080/a%20b/c?q=%7e",
	"http://xn--bcher-kva.example/dir/x",    // IDNA host
	"http://bücher.example/dir/x?y",         // IDNA host, not yet encoded
	"http://[::1]:8080/a/b",                 // IPv6
	"http://127.0.0.1:0/a",                  // port 0
	"http://192.168.1.1/a/./b/../c",         // dot segments in the base
	"http://example.com/%7euser/a b/?q=a'b", // base path and query not canonical
	"http://example.com/a/b?",               // empty query
	"http://example.com/a;b=c/d:e@f",
}

func prepareBases(t testing.TB) []*baseURL {
	var out []*baseURL
	for _, s := range fuzzBases {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("base %q: %v", s, err)
		}
		b, err := newBase(u)
		if err != nil {
			t.Fatalf("base %q: %v", s, err)
		}
		out = append(out, b)
	}
	return out
}

// checkFastPath is the contract of the fast path: when it takes s, the full
// path returns the same URL and no error.
func checkFastPath(t *testing.T, b *baseURL, s string) bool {
	fast, ok := fastCanonicalize(b, s)
	if !ok {
		return false
	}
	full, err := canonicalizeFull(b, s)
	if err != nil || full != fast {
		base := "<nil>"
		if b != nil {
			base = b.scheme + "://" + b.host + b.path
		}
		t.Errorf("against %s, %q: fast path %q, full path %q, %v", base, s, fast, full, err)
	}
	return true
}

func TestFastPath(t *testing.T) {
	bases := prepareBases(t)
	for _, s := range []string{
		"", "#", "#x", "?", "?q", "?q#f", "a", "a/", "./a", "../a", "../../../a", ".", "..", "./", "../",
		"/", "//", "///", "/a/../..", "a/./b/../c", "%2e%2E/x", "a/%2e", "a/%2e%2e", ".%2e", "/%7Ex/%7e",
		"/a%2fb", "/a%zz", "/a%", "/a%4", "/a%4?b", "?a=%4#b", "?%zz", "/a b", "/ü", "?ü=1", "/a\"b<c>",
		"?a'b", "/a'b", "/a[b]", "?a[]=1", "/a|b", "?a|b", "/a^b", "?a^b", "/a`b", "/{a}", "?{a}", "/a\\b",
		"a\tb", "?a\nb", "#a\tb", "  /a  ", "\x01/a\x02", "/a\x01b", "java\tscript:x", "javascript:x", "mailto:a@b",
		"http:a", "https:a", "http:/a", "http://a", "http:\\\\a\\b", "HTTP://A.COM", "http://a.com:80/",
		"https://a.com:443/", "https://a.com:80/", "http://a.com:080/", "http://a.com:0/", "http://a.com:00/",
		"http://a.com:65535/", "http://a.com:65536/", "http://a.com:/", "http://a.com:1:2/", "http://a.com.:8/",
		"http://a.com..", "http://.a.com/", "http://a..com/", "http://a@b.com/", "http://a:b@c.com/",
		"http://xn--bcher-kva.example/", "http://XN--abc.com/", "http://axn--b.com/", "http://1.2.3.4/",
		"http://a.b.c.0x1/", "http://a.9b/", "http://a_b.example/", "http://-a.example/", "http://a.-b/",
		"http://%61.com/", "http://bücher.example/", "http://[::1]/", "http://a.com?x", "http://a.com#x",
		"http://a.com/?", "//a.com", "//a.com:8080/x?y#z", "//a.com:80", "1a:b", "a:b", "http://a.com/ a",
		"http://" + string(make([]byte, 70)) + ".com/",
	} {
		for _, b := range append([]*baseURL{nil}, bases...) {
			checkFastPath(t, b, s)
		}
	}
}

// Hosts that are not plain names take the fast path through canonicalHost
// (appendOtherHost), and agree with the full path.
func TestFastPathOtherHosts(t *testing.T) {
	bases := prepareBases(t)
	for _, s := range []string{
		"http://bücher.example/", "https://BÜCHER.example:8443/a/./b?c#d", "http://xn--bcher-kva.example/x",
		"http://XN--BCHER-KVA.example./", "http://日本語。ｊｐ/", "http://☃.net/", "HTTPS://münchen.de/x",
		"http://0xc0.0250.1/", "http://3232235521/", "http://127.1:8080/", "http://%65xample.com/", "http://a.b.c.0x1g/",
	} {
		for _, b := range append([]*baseURL{nil}, bases...) {
			if !checkFastPath(t, b, s) {
				t.Errorf("fast path declined %q", s)
			}
		}
	}
	// What canonicalHost refuses, and what the full path reads another way,
	// is declined.
	for _, s := range []string{"http://xn--/", "http://a..b/", "http://256.1.1.1/", "http://a@bücher.example/",
		"http://[::1]/", "http://bü\\cher.example/", "http://bü cher.example/", "http://a%40b.com/"} {
		if checkFastPath(t, nil, s) {
			t.Errorf("fast path took %q", s)
		}
	}
}

// The fast path takes nearly every link of the mix, and agrees with the
// full path on all of them.
func TestFastPathMix(t *testing.T) {
	n, fast := 0, 0
	for _, p := range linkMix(64, 64) {
		u, err := url.Parse(p.url)
		if err != nil {
			t.Fatal(err)
		}
		b, err := newBase(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range p.hrefs {
			n++
			if checkFastPath(t, b, h) {
				fast++
			}
		}
	}
	t.Logf("fast path: %d of %d links (%.1f%%)", fast, n, 100*float64(fast)/float64(n))
	if fast < n*9/10 {
		t.Errorf("fast path took %d of %d links, want 90%%", fast, n)
	}
}

// FuzzFastPath compares the fast path with the full WHATWG path on any
// input, against every kind of base and none.
func FuzzFastPath(f *testing.F) {
	for _, s := range []string{
		"/a/b", "../x", "./x", "x?y#z", "//h.example/p", "HTTP://H.EXAMPLE:80/a/./b/../c%7e?q=1&r=%7e#frag",
		"?q", "#f", "", "/%2e%2E/x", "a b/ü?c d'e", "http://a.com:08080/", "http:x", "javascript:void(0)",
	} {
		f.Add(s)
	}
	for _, p := range linkMix(4, 64) { // every form of the mix
		for _, h := range p.hrefs {
			f.Add(h)
		}
	}
	bases := prepareBases(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, b := range append([]*baseURL{nil}, bases...) {
			checkFastPath(t, b, s)
		}
	})
}

// FuzzIsCanonicalSame holds IsCanonical to the first, simpler version of it.
func FuzzIsCanonicalSame(f *testing.F) {
	for _, s := range []string{"http://example.org/", "https://a.example:8443/p?q=%41", "http://1.2.3.4/%20", "http://a.example/%7e",
		"http://a..b/", "http://a.b./", "http://.a/", "http://a/./b", "http://a/b/..", "http://a/%2E", "http://0x1.a/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := IsCanonical(s), isCanonicalRef(s); got != want {
			t.Errorf("IsCanonical(%q) = %v, first version %v", s, got, want)
		}
	})
}

// The fast path agrees with the full path on every WPT vector.
func TestFastPathWPT(t *testing.T) {
	n := 0
	for _, c := range loadWPT(t) {
		var b *baseURL
		if c.Base != nil {
			u, err := url.Parse(*c.Base)
			if err != nil {
				continue
			}
			if b, err = newBase(u); err != nil {
				continue
			}
		}
		if checkFastPath(t, b, c.Input) {
			n++
		}
	}
	t.Logf("fast path took %d vectors", n)
}

func TestDottedQuadBytes(t *testing.T) {
	for _, h := range []string{"1.2.3.4", "0.0.0.0", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..3.4",
		"1.2.3.4.", ".1.2.3", "1234.1.1.1", "1.2.3.a", "10.0.0.100", "1.2.3.00", "a.1.2.3", "", "9.99.199.249"} {
		if got, want := dottedQuadBytes([]byte(h)), dottedQuad(h); got != want {
			t.Errorf("dottedQuadBytes(%q) = %v, dottedQuad %v", h, got, want)
		}
	}
}
