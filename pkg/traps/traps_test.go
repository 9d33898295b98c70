package traps

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/pkg/urlx"
)

func TestSplit(t *testing.T) {
	for _, tt := range []struct{ in, path, query string }{
		{"http://a.test/", "/", ""},
		{"http://a.test/p/q?x=1&y", "/p/q", "x=1&y"},
		{"http://a.test:8080/p?", "/p", ""},
		{"http://a.test/p?x=/a/b/c", "/p", "x=/a/b/c"}, // slashes of the query are no path
		{"http://a.test/p#f/g", "/p", ""},
		{"http://a.test", "", ""},
		{"http://a.test?x=1", "", "x=1"},
		{"/rel/path?q", "/rel/path", "q"},
	} {
		if p, q := Split(tt.in); p != tt.path || q != tt.query {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", tt.in, p, q, tt.path, tt.query)
		}
	}
}

func TestDepth(t *testing.T) {
	for _, tt := range []struct {
		path string
		want int
	}{
		{"", 0},
		{"/", 0},
		{"/a", 1},
		{"/a/", 1}, // a trailing slash adds no segment
		{"/a/b", 2},
		{"/a/b/", 2},
		{"/a//b", 3}, // inner empty segments count
		{"//", 1},
		{"///", 2},
		{"/a%2Fb%2Fc", 1}, // an encoded slash separates nothing
		{"/a;x=1/b;y=2", 2},
		{"/" + strings.Repeat("d/", 21), 21},
	} {
		if got := Depth(tt.path); got != tt.want {
			t.Errorf("Depth(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

func TestMostRepeated(t *testing.T) {
	long := "/" + strings.Repeat("x/", 70) + "y" // past the stack array
	distinct := ""
	for i := range 100 {
		distinct += "/s" + strings.Repeat("z", i)
	}
	for _, tt := range []struct {
		path string
		want int
	}{
		{"", 0},
		{"/", 0},
		{"/a", 1},
		{"/a/b/c", 1},
		{"/a/a", 2},
		{"/a/a/", 2}, // the trailing slash's empty segment is none
		{"//", 1},    // one empty segment, as Depth counts it
		{"///", 2},
		{"/a/a/a", 3},
		{"/a/a/a/", 3},
		{"/a/b/a/c/a", 3},               // anywhere, not only in a row (StormCrawler, Nutch)
		{"/a/b/a/b/a/b/", 3},            // a cycle of relative links
		{"/ab/a/b", 1},                  // whole segments, not substrings
		{"/a/A/a", 2},                   // as written: case matters in paths
		{"/a//b//c//", 3},               // inner empty segments count: "" three times
		{"/a%2Fa%2Fa", 1},               // one segment
		{"/p;s=1/p;s=1/p;s=2", 2},       // path parameters are part of the segment
		{"/2012/12/12", 2},              // a date's repeat is within the default of 2
		{long, 70},                      // the map fallback
		{distinct, 1},                   // ditto, all different
		{"/x" + long[:len(long)-1], 71}, // trailing slash on the long path
	} {
		if got := MostRepeated(tt.path); got != tt.want {
			t.Errorf("MostRepeated(%.60q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

func TestCountParams(t *testing.T) {
	for _, tt := range []struct {
		query string
		want  int
	}{
		{"", 0},
		{"a", 1},
		{"a=1&b=2", 2},
		{"a=1&a=2&a=3", 3}, // repeated names each count
		{"a=1&&b=2&", 2},   // empty pieces do not
		{"&&&", 0},
		{"=&=", 2},
		{"a=1;b=2", 1}, // ';' is no separator
		{"q=a%26b", 1}, // nor an encoded '&'
	} {
		if got := CountParams(tt.query); got != tt.want {
			t.Errorf("CountParams(%q) = %d, want %d", tt.query, got, tt.want)
		}
	}
}

// The defaults of --max-url-length, --max-path-depth,
// --max-repeated-segments and --max-query-params.
var defaults = Limits{MaxURLLength: 256, MaxPathDepth: 20, MaxRepeatedSegments: 2, MaxQueryParams: 20}

// segs is a path of n distinct segments.
func segs(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "/s%d", i)
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	params := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString("p=1")
		}
		return b.String()
	}
	for _, tt := range []struct {
		l    Limits
		in   string
		want Reason
	}{
		{defaults, "http://a.test/", Allowed},
		{defaults, "http://a.test/news/2024/05/17/story.html?id=7&page=2", Allowed},
		{defaults, "http://a.test/" + strings.Repeat("a", 300), URLLength},
		{defaults, "http://a.test" + segs(20) + "/", Allowed}, // 20 segments
		{defaults, "http://a.test" + segs(21), PathDepth},
		{defaults, "http://a.test" + segs(20) + "?" + params(20), Allowed},
		{defaults, "http://a.test/" + strings.Repeat("a/b/", 10) + "x", PathDepth}, // both: depth first
		{defaults, "http://a.test/cal/a/cal/b/cal/c", RepeatedSegment},
		{defaults, "http://a.test/a/b/a/b/", Allowed},
		{Limits{MaxRepeatedSegments: 1}, "http://a.test//", Allowed},
		{Limits{MaxRepeatedSegments: 1}, "http://a.test///", RepeatedSegment},
		{defaults, "http://a.test/a/b/a/b/a/", RepeatedSegment},
		{defaults, "http://a.test/p?" + params(20), Allowed},
		{defaults, "http://a.test/p?" + params(21), QueryParams},
		{defaults, "http://a.test/p?" + params(21) + "&&&", QueryParams},
		{defaults, "http://a.test/p?x=/a/a/a/a", Allowed}, // the query's slashes are no path
		{defaults, "http://a.test/a%2Fa%2Fa%2Fa", Allowed},
		{Limits{}, "http://a.test/" + strings.Repeat("a/", 100) + "?" + params(100), Allowed},
		{Limits{MaxURLLength: 20}, "http://a.test/" + strings.Repeat("a/", 100), URLLength},
		{Limits{MaxRepeatedSegments: 1}, "http://a.test/a/b/a", RepeatedSegment},
		{Limits{MaxQueryParams: 1}, "http://a.test/a/a/a/a?x=1", Allowed},
	} {
		if got := tt.l.Check(tt.in); got != tt.want {
			t.Errorf("%+v.Check(%.80q) = %v, want %v", tt.l, tt.in, got, tt.want)
		}
	}
}

// The checks read canonical URLs: what the canonicalizer makes of dot
// segments, encoded slashes and doubled slashes is what they count.
func TestCheckCanonical(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Reason
	}{
		{"http://a.test/a/./a/../a/b/a", RepeatedSegment},                 // /a/a/b/a
		{"http://a.test/a/b/../b/../b", Allowed},                          // /a/b
		{"http://a.test/a%2fa%2Fa%2fa/x", Allowed},                        // one segment, however encoded
		{"http://a.test/x//y//z//", RepeatedSegment},                      // empty segments kept and counted
		{"http://a.test/" + strings.Repeat("%2E%2E/", 30) + "a", Allowed}, // encoded dot segments resolve
	} {
		c, err := urlx.Canonicalize(tt.in)
		if err != nil {
			t.Fatalf("Canonicalize(%q): %v", tt.in, err)
		}
		if got := defaults.Check(c); got != tt.want {
			t.Errorf("Check(%q) (canonical %q) = %v, want %v", tt.in, c, got, tt.want)
		}
	}
}

func TestReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Excluded() {
		if r.String() == "" || r.Words() == "" || seen[r.String()] || strings.ContainsAny(r.String(), " -") {
			t.Errorf("reason %d: label %q, words %q", r, r.String(), r.Words())
		}
		seen[r.String()] = true
	}
	if len(Excluded()) != int(NumReasons)-1 {
		t.Errorf("Excluded lists %d reasons of %d", len(Excluded()), NumReasons-1)
	}
	if NumReasons.String() != "unknown" {
		t.Errorf("out of range: %q", NumReasons.String())
	}
}

// The common path (a URL within every limit) allocates nothing.
func TestCheckAllocs(t *testing.T) {
	u := "http://a.test/news/2024/05/17/world/europe/story-title-here.html?id=7&page=2&ref=home"
	if n := testing.AllocsPerRun(100, func() { _ = defaults.Check(u) }); n != 0 {
		t.Errorf("Check allocates %.0f times per URL", n)
	}
	deep := "http://a.test/" + strings.Repeat("seg/", 60) // within the stack array
	if n := testing.AllocsPerRun(100, func() { _ = MostRepeated(deep) }); n != 0 {
		t.Errorf("MostRepeated allocates %.0f times on 60 segments", n)
	}
}

var benchURLs = []string{
	"http://www.example.com/",
	"http://www.example.com/news/2024/05/17/world/europe/story-title-here.html",
	"http://shop.example.com/category/shoes/running?color=red&size=42&sort=price&page=3",
	"http://www.example.com/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/index.html",
	"http://www.example.com/cal/2024/cal/2025/cal/2026/",
	"http://docs.example.com/en/latest/api/reference/module/submodule/class.html#method",
}

// BenchmarkCheck: the default limits on a mix of typical and trap URLs.
func BenchmarkCheck(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = defaults.Check(benchURLs[i%len(benchURLs)])
	}
}

// BenchmarkCheckWorst: a 360-byte path of 120 distinct two-letter segments
// (depth and length limits off, so the repeat check sees all of them: past
// the stack array, the map fallback).
func BenchmarkCheckWorst(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("http://a.test")
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for i := range 120 {
		sb.WriteByte('/')
		sb.WriteByte(letters[i%52])
		sb.WriteByte(letters[i/52])
	}
	u := sb.String()
	l := Limits{MaxRepeatedSegments: 2, MaxQueryParams: 20}
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Check(u)
	}
}
