package parser

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const page = "http://example.com/dir/page.html"

func extract(t *testing.T, body string) Extracted {
	t.Helper()
	ex, err := Extract(Page{URL: page, Body: []byte(body)}, DefaultKinds)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return ex
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		title   string
		links   []string
		dropped int
	}{
		{
			name:  "relative links",
			body:  `<html><head><title>Hello</title></head><body><a href="a.html">a</a> <a href="/b">b</a> <a href="../c/">c</a> <a href="//other.org/d">d</a> <a href="?q=1">q</a></body></html>`,
			title: "Hello",
			links: []string{
				"http://example.com/dir/a.html", "http://example.com/b", "http://example.com/c/",
				"http://other.org/d", "http://example.com/dir/page.html?q=1",
			},
		},
		{
			name:  "absolute and area links, whitespace and case",
			body:  `<A HREF=" https://Example.COM:443/x "></A><map><area shape=rect href="http://example.com:80/y"></map><a href='z'>`,
			links: []string{"https://example.com/x", "http://example.com/y", "http://example.com/dir/z"},
		},
		{
			name:  "base href",
			body:  `<head><base href="/other/sub/"><base href="http://ignored.example/"></head><a href="x">x</a><a href="/y">y</a>`,
			links: []string{"http://example.com/other/sub/x", "http://example.com/y"},
		},
		{
			name:  "base href after a link applies to the whole page",
			body:  `<a href="x"></a><base href="http://cdn.example/p/">`,
			links: []string{"http://cdn.example/p/x"},
		},
		{
			name:  "invalid base href is ignored",
			body:  `<base href="http://[bad/"><a href="x">`,
			links: []string{"http://example.com/dir/x"},
		},
		{
			name:  "javascript base href is ignored",
			body:  `<base href="javascript:alert(1)"><a href="x">`,
			links: []string{"http://example.com/dir/x"},
		},
		{
			name:  "base without href does not count",
			body:  `<base target="_top"><base href="/b/"><a href="x">`,
			links: []string{"http://example.com/b/x"},
		},
		{
			name:  "fragments",
			body:  `<a href="#top">t</a><a href="other.html#s1">1</a><a href="other.html#s2">2</a>`,
			links: []string{"http://example.com/dir/page.html", "http://example.com/dir/other.html"},
		},
		{
			name:  "duplicate links keep the first",
			body:  `<a href="b">b</a><a href="a">a</a><a href="./b">b</a><a href="http://EXAMPLE.com/dir/a">a</a><a href="b#x">`,
			links: []string{"http://example.com/dir/b", "http://example.com/dir/a"},
		},
		{
			name:    "javascript, mailto and other schemes are dropped and counted",
			body:    `<a href="javascript:void(0)">j</a><a href=" JAVASCRIPT:x">J</a><a href="mailto:a@b.c">m</a><a href="tel:+1">t</a><a href="data:text/html,x">d</a><a href="ftp://x/">f</a><a href="http://[::1">bad</a><a href="ok">ok</a>`,
			links:   []string{"http://example.com/dir/ok"},
			dropped: 7,
		},
		{
			name:  "a without href, duplicate href attributes",
			body:  `<a name="x">x</a><a href="first" href="second">`,
			links: []string{"http://example.com/dir/first"},
		},
		{
			name:  "entities in attributes and title",
			body:  `<title>Fish &amp; Chips &lt;3</title><a href="q?a=1&amp;b=2">`,
			title: "Fish & Chips <3",
			links: []string{"http://example.com/dir/q?a=1&b=2"},
		},
		{
			name:  "title whitespace collapsed, first title only",
			body:  "<title>\n  Hello \t\r\n World  </title><svg><title>Second</title></svg>",
			title: "Hello World",
		},
		{
			name:  "links in scripts, styles and comments are not links",
			body:  `<script>var s = '<a href="/s">';</script><style>a[href="/t"]{}</style><!-- <a href="/c"> --><a href="/real">`,
			links: []string{"http://example.com/real"},
		},
		{
			name: "malformed HTML",
			// The first href of a tag wins; a tag cut off by the end of the
			// input is dropped, as HTML parsers do.
			body:  `<html><body><p><a href="/one"<a href=/two>x</b></i><a href="/three" <div> <table><tr><a href=four`,
			links: []string{"http://example.com/one", "http://example.com/three"},
		},
		{
			name:  "unclosed tags and attributes",
			body:  `<title>Unclosed<a href="/x">`,
			title: `Unclosed<a href="/x">`,
		},
		{
			name:  "unclosed attribute value",
			body:  `<a href="/ok"></a><a href="/never-closed`,
			links: []string{"http://example.com/ok"},
		},
		{
			name: "empty page",
			body: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := extract(t, tt.body)
			if ex.Title != tt.title {
				t.Errorf("title %q, want %q", ex.Title, tt.title)
			}
			want := tt.links
			if want == nil {
				want = []string{}
			}
			if !reflect.DeepEqual(ex.URLs(), want) {
				t.Errorf("links\n got %q\nwant %q", ex.URLs(), want)
			}
			if ex.Dropped != tt.dropped {
				t.Errorf("dropped %d, want %d", ex.Dropped, tt.dropped)
			}
			if ex.Truncated {
				t.Error("truncated")
			}
		})
	}
}

func TestExtractBadPageURL(t *testing.T) {
	for _, u := range []string{"", "/relative", "mailto:x@y", "http://"} {
		if ex, err := Extract(Page{URL: u, Body: []byte(`<a href="x">`)}, DefaultKinds); err == nil {
			t.Errorf("Extract(page %q) = %+v, want an error", u, ex)
		}
	}
}

func TestExtractTitleCap(t *testing.T) {
	long := strings.Repeat("é", 1000) // 2000 bytes
	ex := extract(t, "<title>"+long+"</title>")
	if len(ex.Title) > MaxTitle || len(ex.Title) < MaxTitle-1 || !utf8.ValidString(ex.Title) {
		t.Errorf("title of %d bytes (valid UTF-8: %v), want at most %d", len(ex.Title), utf8.ValidString(ex.Title), MaxTitle)
	}
	ex = extract(t, "<title>caf\xe9 \xff</title>") // not UTF-8, no charset given: windows-1252
	if ex.Title != "café ÿ" {
		t.Errorf("title %q", ex.Title)
	}
}

func TestExtractLinkCap(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxLinks+5; i++ {
		fmt.Fprintf(&b, `<a href="/p%d">`, i)
		fmt.Fprintf(&b, `<a href="/p%d">`, i) // repeats do not count
	}
	ex := extract(t, b.String())
	if len(ex.Links) != MaxLinks || !ex.Truncated {
		t.Errorf("%d links, truncated %v; want %d, true", len(ex.Links), ex.Truncated, MaxLinks)
	}
	if ex.Links[MaxLinks-1].URL != fmt.Sprintf("http://example.com/p%d", MaxLinks-1) {
		t.Errorf("last link %q", ex.Links[MaxLinks-1].URL)
	}

	// Exactly MaxLinks distinct links, then only repeats: not truncated.
	b.Reset()
	for i := 0; i < 2*MaxLinks; i++ {
		fmt.Fprintf(&b, `<a href="/p%d">`, i%MaxLinks)
	}
	if ex := extract(t, b.String()); len(ex.Links) != MaxLinks || ex.Truncated {
		t.Errorf("%d links, truncated %v; want %d, false", len(ex.Links), ex.Truncated, MaxLinks)
	}
}

func TestExtractJunk(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	junk := make([]byte, 1<<20)
	rng.Read(junk)
	ex := extract(t, string(junk))
	for _, l := range ex.URLs() {
		if !strings.HasPrefix(l, "http") {
			t.Errorf("junk gave link %q", l)
		}
	}

	// An enormous attribute and an enormous title.
	huge := strings.Repeat("a", 4<<20)
	ex = extract(t, `<title>`+huge+`</title><a href="/`+huge+`"><a href="/ok" x="`+huge+`">`)
	if len(ex.Title) > MaxTitle || !reflect.DeepEqual(ex.URLs(), []string{"http://example.com/ok"}) || ex.Dropped != 1 {
		t.Errorf("title of %d bytes, links %q, dropped %d", len(ex.Title), ex.URLs(), ex.Dropped)
	}

	// Deep nesting and unterminated constructs.
	for _, body := range []string{
		strings.Repeat("<div>", 100000) + `<a href="/deep">`,
		"<!--", "<![CDATA[", "<script>", "<title>", "<a href=", "<a href='", "<", "</", "<!", "<?",
		"\x00<a\x00 href=\x00/x\x00>", "<a href=\"\xff\xfe\">",
	} {
		extract(t, body)
	}
}

func TestIsHTML(t *testing.T) {
	tests := []struct {
		ct   string
		body string
		want bool
	}{
		{"text/html", "", true},
		{"text/html; charset=utf-8", "", true},
		{"TEXT/HTML; Charset=\"ISO-8859-1\"", "", true},
		{"application/xhtml+xml", "", true},
		{"text/html; charset", "", true}, // bad parameter, media type still clear
		{"text/plain", "<html><body>hi</body></html>", false},
		{"application/json", "<html>", false},
		{"image/png", "", false},
		{"", "<!DOCTYPE html><html><body>hi</body></html>", true},
		{"", "<html><head><title>x</title>", true},
		{"", "  \n<p>hi</p>", true},
		{"", "just some text", false},
		{"", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", false},
		{"", "", false},
		{";;;", "<html><body>", true}, // unparsable header: sniffed
	}
	for _, tt := range tests {
		if got := IsHTML(tt.ct, []byte(tt.body)); got != tt.want {
			t.Errorf("IsHTML(%q, %.20q) = %v, want %v", tt.ct, tt.body, got, tt.want)
		}
	}
}

// FuzzExtract checks that no input panics and that the output keeps its
// promises: canonical http(s) links, no repeats, bounded counts and title.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		`<title>t</title><a href="a">`, `<base href="//x/"><a href="../b#c">`, `<a href="javascript:x">`,
		`<area href="http://[::1]:80/">`, `<a href=%zz%>`, "<title>\xff", `<a href="\\x\y">`, "<!--<a href=x>-->",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		start := time.Now()
		ex, err := Extract(Page{URL: page, Body: body}, AllKinds)
		if err != nil {
			t.Fatal(err)
		}
		// Bounded time: linear work; even a slow machine under -race does
		// a fuzz input (at most a few MB) well within this.
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%d bytes took %v", len(body), d)
		}
		if len(ex.Text) > MaxText || !utf8.ValidString(ex.Text) || len(ex.Headings) > MaxHeadings {
			t.Fatalf("text of %d bytes, %d headings", len(ex.Text), len(ex.Headings))
		}
		if len(ex.Title) > MaxTitle || !utf8.ValidString(ex.Title) {
			t.Fatalf("bad title %q", ex.Title)
		}
		if len(ex.Links) > MaxLinks || ex.Links == nil {
			t.Fatalf("%d links (nil: %v)", len(ex.Links), ex.Links == nil)
		}
		seen := map[string]bool{}
		for _, link := range ex.Links {
			l := link.URL
			if len(link.Anchor) > MaxAnchor || !utf8.ValidString(link.Anchor) || !utf8.ValidString(link.Context) {
				t.Fatalf("anchor %q context %q", link.Anchor, link.Context)
			}
			if seen[l] {
				t.Fatalf("repeated link %q", l)
			}
			seen[l] = true
			if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
				t.Fatalf("link %q", l)
			}
		}
		IsHTML("", body)
		IsHTML(string(body), body)
	})
}

// Many links in text without spaces: contexts are cut, not quadratic.
func TestExtractManyLinksNoSpaces(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxLinks; i++ {
		fmt.Fprintf(&b, `<a href="/p%d">x%d</a>`, i, i)
	}
	start := time.Now()
	ex := extract(t, b.String())
	if len(ex.Links) != MaxLinks {
		t.Fatalf("%d links", len(ex.Links))
	}
	for _, l := range ex.Links {
		if len(l.Context) > 600 {
			t.Fatalf("context of %d bytes", len(l.Context))
		}
	}
	t.Logf("%d links in %v", len(ex.Links), time.Since(start))
}

// TestExtractResultOutlivesItsBuffer: the buffer a page's text is gathered
// in goes back to a pool for the next page; what Extract returned must not
// share it.
func TestExtractResultOutlivesItsBuffer(t *testing.T) {
	first := extract(t, `<title>One</title><p>alpha beta gamma <a href="/x">delta</a> epsilon zeta</p>`)
	text, context := strings.Clone(first.Text), strings.Clone(first.Links[0].Context) // the bytes as returned
	for i := 0; i < 50; i++ {
		extract(t, fmt.Sprintf(`<p>%s <a href="/y">other words</a> %s</p>`, strings.Repeat("zz ", 50+i), strings.Repeat("qq ", 50)))
	}
	if first.Text != text || first.Links[0].Context != context || !strings.Contains(text, "alpha beta gamma") || !strings.Contains(context, "delta") {
		t.Fatalf("the first page's text or link context changed after other pages were parsed: %q, %q", first.Text, first.Links[0].Context)
	}
}
