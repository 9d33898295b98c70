package urlx

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com", "http://example.com/"},
		{"HTTP://Example.COM/Path", "http://example.com/Path"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"http://example.com:0080/a", "http://example.com/a"},
		{"https://example.com:80/a", "https://example.com:80/a"},
		{"http://example.com:8080", "http://example.com:8080/"},
		{"http://example.com:/a", "http://example.com/a"},
		{"http://example.com./a", "http://example.com/a"},
		{"http://user:pass@example.com/a", "http://example.com/a"},
		{"http://example.com/a#frag", "http://example.com/a"},
		{"http://example.com/#", "http://example.com/"},
		{"http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"http://example.com/../../a", "http://example.com/a"},
		{"http://example.com/a/b/..", "http://example.com/a/"},
		{"http://example.com/a/.", "http://example.com/a/"},
		{"http://example.com/a//b", "http://example.com/a//b"},
		{"http://example.com/%2e%2E/a/%2e", "http://example.com/a/"},
		{"http://example.com/%7euser/%7E", "http://example.com/~user/~"},
		{"http://example.com/a%2fb%3a", "http://example.com/a%2Fb%3A"},
		{"http://example.com/%41%5a%30", "http://example.com/AZ0"},
		{"http://example.com/50%off", "http://example.com/50%25off"},
		{"http://example.com/a b<c>", "http://example.com/a%20b%3Cc%3E"},
		{"http://example.com/ümlaut", "http://example.com/%C3%BCmlaut"},
		{"http://example.com/a?b=%7e&a=1&b", "http://example.com/a?b=%7e&a=1&b"},
		{"http://example.com/?q=a b'c", "http://example.com/?q=a%20b%27c"},
		{"http://example.com/?q=100%", "http://example.com/?q=100%25"},
		{"http://example.com/?", "http://example.com/?"},
		{"http://example.com?x", "http://example.com/?x"},
		{"  http://example.com/a \n", "http://example.com/a"},
		{"http://exa\tmple.com/a\nb", "http://example.com/ab"},
		{`http:\\example.com\a\b?c\d`, `http://example.com/a/b?c\d`},
		{"http:example.com/a", "http://example.com/a"},
		{"http:///example.com/a", "http://example.com/a"},
		{"http://EXAMPLE.com/", "http://example.com/"},
		{"http://%65xample.com/", "http://example.com/"},
		{"http://bücher.example/", "http://xn--bcher-kva.example/"},
		{"http://BÜCHER.example/", "http://xn--bcher-kva.example/"},
		{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"},
		{"http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/"},
		{"http://日本語。ｊｐ/", "http://xn--wgv71a119e.jp/"},
		{"http://☃.net/", "http://xn--n3h.net/"},
		{"http://my_host.example/", "http://my_host.example/"},
		{"http://r3---sn-abc.example/", "http://r3---sn-abc.example/"},
		{"http://192.168.0.1/", "http://192.168.0.1/"},
		{"http://0xc0.0250.1/", "http://192.168.0.1/"},
		{"http://3232235521/", "http://192.168.0.1/"},
		{"http://127.1/", "http://127.0.0.1/"},
		{"http://[::1]/", "http://[::1]/"},
		{"http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"},
		{"http://[2001:DB8:0:0:1:0:0:1]/", "http://[2001:db8::1:0:0:1]/"},
		{"http://[::ffff:1.2.3.4]/", "http://[::ffff:102:304]/"},
		{"https://[::1]:443/", "https://[::1]/"},
	}
	for _, tt := range tests {
		got, err := Canonicalize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Canonicalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			continue
		}
		if again, err := Canonicalize(got); again != got || err != nil {
			t.Errorf("Canonicalize(%q) = %q, %v; not idempotent", got, again, err)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct{ in, msg string }{
		{"", "relative reference"},
		{"example.com/a", "relative reference"},
		{"/a/b", "relative reference"},
		{"mailto:a@example.com", `unsupported scheme "mailto"`},
		{"javascript:alert(1)", `unsupported scheme "javascript"`},
		{"ftp://example.com/", `unsupported scheme "ftp"`},
		{"file:///etc/passwd", `unsupported scheme "file"`},
		{"http://", "empty host"},
		{"http:///", "empty host"},
		{"http://user@/a", "empty host"},
		{"http://:80/", "empty host"},
		{"http://./", "empty host"},
		{"http://exa mple.com/", "forbidden character"},
		{"http://exa%20mple.com/", "forbidden character"},
		{"http://a<b.com/", "forbidden character"},
		{"http://a%zzb.com/", "forbidden character"},
		{"http://example.com:port/", "port is not a number"},
		{"http://example.com:65536/", "port out of range"},
		{"http://example.com:1:2/", "port is not a number"},
		{"http://[::1/", "unclosed"},
		{"http://[::1]x/", "junk after IPv6"},
		{"http://[1.2.3.4]/", "bad IPv6"},
		{"http://[fe80::1%25eth0]/", "bad IPv6"},
		{"http://[::g]/", "bad IPv6"},
		{"http://256.1.1.1/", "bad IPv4"},
		{"http://1.2.3.4.5/", "bad IPv4"},
		{"http://4294967296/", "bad IPv4"},
		{"http://foo.0x/", "bad IPv4"},
		{"http://a..b/", "empty or long label"},
		{"http://" + strings.Repeat("a", 64) + ".com/", "empty or long label"},
		{"http://xn--/", "punycode"},
		{"http://xn--abc-/", "punycode"},
		{"http://xn--zz9999999999/", "punycode"},
		{"http://\xff.com/", "not UTF-8"},
		{"http://a\u200e.com/", "not allowed in host"},
		{"http://example.com/" + strings.Repeat("a", MaxLength), "longer than"},
	}
	for _, tt := range tests {
		got, err := Canonicalize(tt.in)
		if err == nil {
			t.Errorf("Canonicalize(%q) = %q, want an error", tt.in, got)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Canonicalize(%q): error %q, want ErrInvalid with %q", tt.in, err, tt.msg)
		}
	}
	if _, err := Canonicalize("mailto:x@y"); !errors.Is(err, ErrUnsupportedScheme) {
		t.Errorf("mailto: error %v does not wrap ErrUnsupportedScheme", err)
	}
}

func TestResolve(t *testing.T) {
	base, _ := url.Parse("http://example.com/dir/page.html?x=1#top")
	tests := []struct{ href, want string }{
		{"other.html", "http://example.com/dir/other.html"},
		{"  other.html\n", "http://example.com/dir/other.html"},
		{"./sub/", "http://example.com/dir/sub/"},
		{"../up", "http://example.com/up"},
		{"../../../up", "http://example.com/up"},
		{"/abs?q", "http://example.com/abs?q"},
		{"?y=2", "http://example.com/dir/page.html?y=2"},
		{"#frag", "http://example.com/dir/page.html?x=1"},
		{"", "http://example.com/dir/page.html?x=1"},
		{"//other.org/a", "http://other.org/a"},
		{`\\other.org\a`, "http://other.org/a"},
		{"///other.org/a", "http://other.org/a"},
		{"https://secure.example.com", "https://secure.example.com/"},
		{"http:rel", "http://example.com/dir/rel"},
		{"https:rel", "https://rel/"},
		{"1a:b", "http://example.com/dir/1a:b"},
		{"a b.html", "http://example.com/dir/a%20b.html"},
		{"%7Efoo", "http://example.com/dir/~foo"},
		{"..", "http://example.com/"},
		{".", "http://example.com/dir/"},
	}
	for _, tt := range tests {
		got, err := Resolve(base, tt.href)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.href, got, err, tt.want)
		}
	}
	for _, href := range []string{"javascript:void(0)", " JavaScript:x", "mailto:a@b", "data:text/html,hi", "tel:+123", "ftp://x/"} {
		if got, err := Resolve(base, href); !errors.Is(err, ErrUnsupportedScheme) {
			t.Errorf("Resolve(%q) = %q, %v; want ErrUnsupportedScheme", href, got, err)
		}
	}
	if _, err := Resolve(&url.URL{Scheme: "ftp", Host: "x"}, "a"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ftp base: error %v, want ErrInvalid", err)
	}
	if got, err := Resolve(nil, "http://a.com/x/../y"); got != "http://a.com/y" || err != nil {
		t.Errorf("nil base: %q, %v", got, err)
	}
	if _, err := Resolve(nil, "y"); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil base, relative: error %v, want ErrInvalid", err)
	}
	// A base with no path.
	bare := &url.URL{Scheme: "HTTPS", Host: "Example.com"}
	if got, err := Resolve(bare, "a"); got != "https://example.com/a" || err != nil {
		t.Errorf("bare base: %q, %v", got, err)
	}
}

func TestHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com/", "example.com"},
		{"http://example.com:8080/a", "example.com:8080"},
		{"https://[::1]:8443/", "[::1]:8443"},
		{"http://192.168.0.1/", "192.168.0.1"},
	}
	for _, tt := range tests {
		if got, err := Host(tt.in); got != tt.want || err != nil {
			t.Errorf("Host(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "/a", "mailto:x@y", "http:///a", "%zz"} {
		if got, err := Host(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Host(%q) = %q, %v; want ErrInvalid", in, got, err)
		}
	}
}

func TestPartition(t *testing.T) {
	// Pinned values: the partition function is a public contract. If this
	// test fails, the change would move hosts of running crawls.
	pinned := []struct {
		host string
		p    int
		want int
	}{
		{"example.com", 64, 9},
		{"example.com", 256, 137},
		{"example.com", 32, 9},
		{"www.example.org:8080", 64, 59},
		{"www.example.org:8080", 256, 123},
		{"xn--bcher-kva.example", 32, 11},
		{"", 256, 153}, // xxhash64("") = 0xef46db3751d8e999
		{"example.com", 1, 0},
	}
	for _, tt := range pinned {
		if got := Partition(tt.host, tt.p); got != tt.want {
			t.Errorf("Partition(%q, %d) = %d; want %d (the partition contract changed)", tt.host, tt.p, got, tt.want)
		}
	}
	counts := make([]int, 16)
	for i := 0; i < 16000; i++ {
		counts[Partition("host"+strconv.Itoa(i)+".example", 16)]++
	}
	for p, n := range counts {
		if n < 850 || n > 1150 {
			t.Errorf("partition %d got %d of 16000 hosts; the spread is poor", p, n)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Partition(_, 0) did not panic")
		}
	}()
	Partition("x", 0)
}

func TestFingerprint(t *testing.T) {
	a, b := Fingerprint("http://example.com/"), Fingerprint("http://example.com/a")
	if a == b {
		t.Error("different URLs share a fingerprint")
	}
	// Pinned: stored seen sets hold these values. xxhash64("") is the
	// published test vector of XXH64 with seed 0.
	for in, want := range map[string]uint64{"": 0xef46db3751d8e999, "http://example.com/": 0xfdb57b2d0813b5b1} {
		if got := Fingerprint(in); got != want {
			t.Errorf("Fingerprint(%q) = %#x, want %#x (the fingerprint contract changed)", in, got, want)
		}
	}
}

func TestRegistrableDomain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"www.example.com", "example.com"},
		{"a.b.example.co.uk", "example.co.uk"},
		{"www.example.co.uk:8080", "example.co.uk"},
		{"example.com", "example.com"},
		{"example.com.", "example.com"},
		{"foo.github.io", "foo.github.io"},
		{"com", "com"},
		{"co.uk", "co.uk"},
		{"localhost", "localhost"},
		{"192.168.0.1", "192.168.0.1"},
		{"192.168.0.1:8080", "192.168.0.1"},
		{"[::1]:8080", "::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"xn--bcher-kva.example.com", "example.com"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := RegistrableDomain(tt.in); got != tt.want {
			t.Errorf("RegistrableDomain(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func BenchmarkCanonicalize(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Canonicalize("HTTP://www.Example.com:80/a/./b/../c%7e?q=1&r=%7e#frag")
	}
}

func BenchmarkResolve(b *testing.B) {
	base, _ := url.Parse("http://www.example.com/dir/page.html")
	for i := 0; i < b.N; i++ {
		Resolve(base, "../other/page-2.html?x=1")
	}
}
