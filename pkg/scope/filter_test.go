package scope

import (
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	f, err := NewFilter([]string{`^https?://[^/]+/docs/`, `\.example\.org/`}, []string{`/private/`, `\?.*sort=`}, 64)
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"http://a.com/docs/x":                          Allowed,
		"https://www.example.org/anything":             Allowed,
		"http://a.com/blog/x":                          NotAllow,
		"http://a.com/docs/private/x":                  Denied, // deny wins over allow
		"http://a.com/docs/list?page=2&sort=name":      Denied,
		"http://a.com/docs/" + strings.Repeat("x", 60): TooLong,
	} {
		if got := f.Check(url); got != want {
			t.Errorf("Check(%q) = %q, want %q", url, got, want)
		}
	}
	open, _ := NewFilter(nil, nil, 0)
	if got := open.Check("http://a.com/" + strings.Repeat("x", 5000)); got != Allowed {
		t.Errorf("no patterns, no bound: %q", got)
	}
	if _, err := NewFilter([]string{"("}, nil, 0); err == nil {
		t.Error("bad pattern accepted")
	}
	var none *Filter
	if none.Check("http://x/") != Allowed {
		t.Error("nil filter")
	}
}
