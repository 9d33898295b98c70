package parser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/pkg/urlx"
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
	if len(ex.Links) != 1 || ex.Links[0].URL != "http://a.test/short" || ex.TooLong != 1 || ex.Dropped != 0 {
		t.Fatalf("links %+v, too long %d, dropped %d", ex.Links, ex.TooLong, ex.Dropped)
	}
	// So is a rel=canonical.
	ex, _ = Extract(Page{URL: "http://a.test/", Body: []byte(`<link rel=canonical href="/` + strings.Repeat("c", 300) + `">`), MaxURLLength: 256}, AllKinds)
	if ex.Canonical != "" {
		t.Errorf("canonical of %d bytes kept", len(ex.Canonical))
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

// A <base> within a long --max-url-length against which every link
// resolves over it: plain relative links are dropped without being
// resolved, and the others stop at maxWastedBytes (truncated) instead of
// building a 16 KB string for each of 100,000 links.
func TestResolvingWorkIsBounded(t *testing.T) {
	ex, err := Extract(Page{URL: "http://a.test/", Body: longBasePage(100000, ""), MaxURLLength: urlx.MaxLength}, AllKinds)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Truncated || len(ex.Links) != 0 || ex.TooLong != 100000 {
		t.Errorf("plain links: %d links, %d too long, %d dropped, truncated %v", len(ex.Links), ex.TooLong, ex.Dropped, ex.Truncated)
	}
	ex, err = Extract(Page{URL: "http://a.test/", Body: longBasePage(100000, "./"), MaxURLLength: urlx.MaxLength}, AllKinds)
	if err != nil {
		t.Fatal(err)
	}
	if !ex.Truncated || len(ex.Links) != 0 || ex.TooLong+ex.Dropped == 0 || ex.TooLong+ex.Dropped > maxWastedBytes/(urlx.MaxLength-64) {
		t.Errorf("dotted links: %d links, %d too long, %d dropped, truncated %v", len(ex.Links), ex.TooLong, ex.Dropped, ex.Truncated)
	}
}

// longBasePage has a <base> just within urlx.MaxLength and n links that
// resolve just over it, each href starting with prefix.
func longBasePage(n int, prefix string) []byte {
	var b strings.Builder
	b.WriteString(`<base href="http://a.test/` + strings.Repeat("d", urlx.MaxLength-len("http://a.test/")-8) + `/">`)
	for i := range n {
		fmt.Fprintf(&b, `<a href="%s%08d">x</a>`, prefix, i)
	}
	return []byte(b.String())
}

// BenchmarkHostileBasePage: memory and time of issue 19's page (it once
// took 2.5 GB of RSS in the parser), with the default --max-url-length
// (the 16 KB <base> is ignored) and with the longest (a base just within
// it, every link resolving over it: the resolving budget stops it).
func BenchmarkHostileBasePage(b *testing.B) {
	for _, bc := range []struct {
		name   string
		body   []byte
		maxURL int
	}{
		{"base16KB/max-url-256", hostileBasePage(), 256},
		{"base16KB/max-url-16KiB", hostileBasePage(), urlx.MaxLength},
		{"base-within-limit/100k-links", longBasePage(100000, ""), urlx.MaxLength},
		{"base-within-limit/100k-dotted-links", longBasePage(100000, "./"), urlx.MaxLength},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if _, err := Extract(Page{URL: "http://a.test/dir/page.html", Body: bc.body, MaxURLLength: bc.maxURL}, AllKinds); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// relativeFloor never exceeds the length of the resolved link: dropping a
// link on it is never wrong.
func TestRelativeFloorIsALowerBound(t *testing.T) {
	bases := []string{"http://a.test", "http://a.test/", "http://a.test/dir/page.html?q=1", "https://a.test:8443/a/b/", "http://a.test/a?x#y"}
	hrefs := []string{"p", "p1/p2", "x?q=a b", "p#frag", "é", "a\\b", "p?x=1&y=2", "../up", "./here", "%41", "a:b", " p", "p\t1", "?q", "#f", "/abs", "//h/p", "P", "~user", "a;b=c"}
	for _, b := range bases {
		u, err := canonicalURL(b)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := urlx.NewBase(u)
		dir := directoryLen(u.String())
		for _, h := range hrefs {
			got, err := base.Resolve(h)
			if floor := relativeFloor(h, dir); err == nil && floor > len(got) {
				t.Errorf("base %s, href %q: floor %d over %q (%d bytes)", u, h, floor, got, len(got))
			}
		}
	}
}
