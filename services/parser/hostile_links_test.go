package parser

import (
	"fmt"
	"strings"
	"testing"
)

// hostileBasePage is issue 19's page: a 16 KB <base href> and 10,000
// relative links (210 KB in all).
func hostileBasePage() []byte {
	var b strings.Builder
	b.WriteString(`<html><head><base href="http://a.test/` + strings.Repeat("d/", 8<<10) + `"></head><body>`)
	for i := range 10000 {
		fmt.Fprintf(&b, `<a href="p%d">x</a>`, i)
	}
	return []byte(b.String())
}

// Issue 19 #2: a <base> longer than a URL may be is ignored, every link is
// within the URL length limit, and the links' bytes are capped.
func TestHostileBaseAndLinksAreCapped(t *testing.T) {
	ex, err := Extract(Page{URL: "http://a.test/dir/page.html", Body: hostileBasePage(), MaxURLLength: 256}, AllKinds)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, l := range ex.Links {
		if len(l.URL) > 256 {
			t.Fatalf("a link of %d bytes", len(l.URL))
		}
		size += len(l.URL)
	}
	if len(ex.Links) == 0 || !strings.HasPrefix(ex.Links[0].URL, "http://a.test/dir/p0") {
		t.Fatalf("links not resolved against the page URL: %d links, first %+v", len(ex.Links), ex.Links[:min(1, len(ex.Links))])
	}
	if size > MaxLinkBytes {
		t.Fatalf("links of %d bytes in all, cap %d", size, MaxLinkBytes)
	}

	// Links that are too long are dropped and counted, not kept.
	long := `<a href="/` + strings.Repeat("x", 300) + `">long</a><a href="/short">s</a>`
	ex, _ = Extract(Page{URL: "http://a.test/", Body: []byte(long), MaxURLLength: 256}, AllKinds)
	if len(ex.Links) != 1 || ex.Links[0].URL != "http://a.test/short" || ex.Dropped != 1 {
		t.Fatalf("links %+v, dropped %d", ex.Links, ex.Dropped)
	}

	// Many short links stop at MaxLinkBytes, marked truncated.
	var b strings.Builder
	for i := range MaxLinks {
		fmt.Fprintf(&b, `<a href="/%s%d">x</a>`, strings.Repeat("y", 200), i)
	}
	ex, _ = Extract(Page{URL: "http://a.test/", Body: []byte(b.String()), MaxURLLength: 256}, AllKinds)
	size = 0
	for _, l := range ex.Links {
		size += len(l.URL)
	}
	if !ex.Truncated || size > MaxLinkBytes || len(ex.Links) >= MaxLinks {
		t.Fatalf("%d links of %d bytes, truncated %v", len(ex.Links), size, ex.Truncated)
	}
}

// BenchmarkHostileBasePage: memory and time of issue 19's page (it once
// took 2.5 GB of RSS in the parser).
func BenchmarkHostileBasePage(b *testing.B) {
	body := hostileBasePage()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Extract(Page{URL: "http://a.test/dir/page.html", Body: body, MaxURLLength: 256}, AllKinds); err != nil {
			b.Fatal(err)
		}
	}
}
