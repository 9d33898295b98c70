package urlx

import (
	"errors"
	"net/url"
	"testing"
)

// FuzzCanonicalize checks that Canonicalize and Resolve never panic, that
// what they return is canonical (a fixed point), printable ASCII, within
// MaxLength and has a host key, and that every error wraps ErrInvalid.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "HTTPS://Ex.COM:443/a/../b?q#f", "http://bücher.example/%7e",
		"http://xn--bcher-kva.example/", "http://0x7f.1/", "http://[::ffff:1.2.3.4]:80/",
		`http:\\a\b\..\c`, "http:a", "//x/y", "../a/./b?c%zz", "%2e%2E/x", "javascript:x",
		"http://a@b@c:0080/", "http://日本語。ｊｐ/", "http://%e2%98%83/", "\t http://a/b \n",
		"http://xn--pokxncvks/", "?q'\"<>", "http://a/\x00\x7f\xff",
	} {
		f.Add(s)
	}
	base, _ := url.Parse("http://example.com/dir/page?x#f")
	f.Fuzz(func(t *testing.T, s string) {
		check := func(what, out string, err error) {
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("%s(%q): error %v does not wrap ErrInvalid", what, s, err)
				}
				return
			}
			again, err := Canonicalize(out)
			if err != nil || again != out {
				t.Fatalf("%s(%q) = %q, but Canonicalize of that = %q, %v", what, s, out, again, err)
			}
			if len(out) > MaxLength {
				t.Fatalf("%s(%q): %d bytes", what, s, len(out))
			}
			for i := 0; i < len(out); i++ {
				if out[i] <= ' ' || out[i] >= 0x7f {
					t.Fatalf("%s(%q) = %q: byte %#x", what, s, out, out[i])
				}
			}
			host, err := Host(out)
			if err != nil {
				t.Fatalf("%s(%q) = %q: Host: %v", what, s, out, err)
			}
			// net/url (so net/http) reads it as we do.
			if u, err := url.Parse(out); err != nil || u.Host != host {
				t.Fatalf("%s(%q) = %q: net/url reads %v, %v", what, s, out, u, err)
			}
		}
		out, err := Canonicalize(s)
		check("Canonicalize", out, err)
		out, err = Resolve(base, s)
		check("Resolve", out, err)
	})
}
