package sitemap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func collect(t *testing.T, body []byte, lim Limits) (Kind, []Entry, error) {
	t.Helper()
	var got []Entry
	kind, err := Parse(bytes.NewReader(body), lim, func(e Entry) error {
		got = append(got, e)
		return nil
	})
	return kind, got, err
}

const urlset = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc> https://example.com/a?x=1&amp;y=2 </loc>
    <lastmod>2025-03-04T05:06:07+01:00</lastmod>
    <changefreq>Weekly</changefreq>
    <priority>0.8</priority>
    <image:image><image:loc>https://cdn.example.com/a.png</image:loc></image:image>
  </url>
  <url><loc>https://example.com/b</loc><lastmod>2024-12</lastmod><changefreq>sometimes</changefreq><priority>7</priority></url>
  <url><lastmod>2024</lastmod></url>
  <url><loc><![CDATA[https://example.com/c]]></loc><lastmod>yesterday</lastmod></url>
</urlset>`

func TestURLSet(t *testing.T) {
	kind, got, err := collect(t, []byte(urlset), Limits{})
	if err != nil || kind != URLSet {
		t.Fatalf("kind %v, err %v", kind, err)
	}
	want := []Entry{
		{Loc: "https://example.com/a?x=1&y=2", LastMod: time.Date(2025, 3, 4, 4, 6, 7, 0, time.UTC), ChangeFreq: "weekly", Priority: 0.8},
		{Loc: "https://example.com/b", LastMod: time.Date(2024, 12, 1, 0, 0, 0, 0, time.UTC), Priority: -1},
		{Loc: "https://example.com/c", Priority: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries %+v, want %d (the <url> without <loc> and the image:loc skipped)", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Loc != want[i].Loc || !got[i].LastMod.Equal(want[i].LastMod) || got[i].ChangeFreq != want[i].ChangeFreq || got[i].Priority != want[i].Priority {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestIndexGzipped(t *testing.T) {
	index := `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
	<sitemap><loc>https://example.com/s1.xml.gz</loc><lastmod>2025-01-02</lastmod></sitemap>
	<sitemap><loc>https://example.com/s2.xml</loc></sitemap>
	</sitemapindex>`
	kind, got, err := collect(t, gz(t, index), Limits{})
	if err != nil || kind != Index || len(got) != 2 || got[0].Loc != "https://example.com/s1.xml.gz" || got[1].Loc != "https://example.com/s2.xml" {
		t.Fatalf("kind %v, entries %+v, err %v", kind, got, err)
	}
	if !got[0].LastMod.Equal(time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("lastmod %v", got[0].LastMod)
	}
}

func TestTextSitemap(t *testing.T) {
	kind, got, err := collect(t, []byte("\ufeffhttps://example.com/1\r\n\n  https://example.com/2  \n"), Limits{})
	if err != nil || kind != URLSet || len(got) != 2 || got[1].Loc != "https://example.com/2" {
		t.Fatalf("kind %v, entries %+v, err %v", kind, got, err)
	}
}

func TestLenientOnBareAmpersand(t *testing.T) {
	_, got, err := collect(t, []byte(`<urlset><url><loc>https://example.com/?a=1&b=2</loc></url></urlset>`), Limits{})
	if err != nil || len(got) != 1 || got[0].Loc != "https://example.com/?a=1&b=2" {
		t.Fatalf("entries %+v, err %v", got, err)
	}
}

func TestNonUTF8Charset(t *testing.T) {
	body := append([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>https://example.com/caf`), 0xe9)
	body = append(body, []byte(`</loc></url></urlset>`)...)
	_, got, err := collect(t, body, Limits{})
	if err != nil || len(got) != 1 || got[0].Loc != "https://example.com/café" {
		t.Fatalf("entries %+v, err %v", got, err)
	}
}

func TestLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := range 10 {
		fmt.Fprintf(&b, "<url><loc>https://example.com/%d</loc></url>", i)
	}
	b.WriteString("</urlset>")
	body := []byte(b.String())

	_, got, err := collect(t, body, Limits{MaxURLs: 4})
	if !errors.Is(err, ErrTooManyURLs) || len(got) != 4 {
		t.Errorf("MaxURLs 4: %d entries, err %v; want 4 and ErrTooManyURLs", len(got), err)
	}
	_, got, err = collect(t, body, Limits{MaxBytes: 100})
	if !errors.Is(err, ErrTooLarge) || len(got) == 0 || len(got) == 10 {
		t.Errorf("MaxBytes 100: %d entries, err %v; want the first few and ErrTooLarge", len(got), err)
	}
	// Exactly at the byte limit is allowed.
	if _, got, err = collect(t, body, Limits{MaxBytes: int64(len(body))}); err != nil || len(got) != 10 {
		t.Errorf("MaxBytes = size: %d entries, err %v", len(got), err)
	}
	// A gzip bomb stops at the uncompressed limit, whatever its ratio.
	bomb := gz(t, "<urlset><url><loc>https://example.com/</loc></url><!--"+strings.Repeat(" ", 10<<20)+"-->")
	if _, _, err := collect(t, bomb, Limits{MaxBytes: 1 << 20}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("bomb of %d bytes: err %v, want ErrTooLarge", len(bomb), err)
	}
	// Text sitemaps count too.
	if _, got, err := collect(t, []byte("https://a/1\nhttps://a/2\nhttps://a/3\n"), Limits{MaxURLs: 2}); !errors.Is(err, ErrTooManyURLs) || len(got) != 2 {
		t.Errorf("text MaxURLs 2: %d entries, err %v", len(got), err)
	}
}

// A broken sitemap gets an error that says what is wrong and where.
func TestBrokenSitemaps(t *testing.T) {
	for _, c := range []struct {
		name, body, want string
	}{
		{"empty", "", "empty"},
		{"html page", "<!doctype html><html><body>Not found</body></html>", "neither urlset nor sitemapindex"},
		{"truncated", "<urlset>\n<url><loc>https://example.com/a</loc></url>\n<url><loc>https://exa", "line 3"},
		{"bad gzip", "\x1f\x8b\x08garbage", "gzip"},
		{"rss feed", `<?xml version="1.0"?><rss version="2.0"><channel></channel></rss>`, "<rss>"},
	} {
		_, _, err := collect(t, []byte(c.body), Limits{})
		t.Logf("%s: %v", c.name, err)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestCallbackErrorStops(t *testing.T) {
	stop := errors.New("enough")
	n := 0
	_, err := Parse(strings.NewReader(urlset), Limits{}, func(Entry) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err %v after %d entries, want the callback's error after 1", err, n)
	}
}

// Parse reads as it goes: a reader that fails past the first entries still
// delivers them first.
func TestStreams(t *testing.T) {
	head := "<urlset><url><loc>https://example.com/1</loc></url>"
	r := io.MultiReader(strings.NewReader(head), &failing{})
	n := 0
	_, err := Parse(r, Limits{}, func(Entry) error { n++; return nil })
	if n != 1 || err == nil {
		t.Errorf("%d entries before the failure, err %v; want 1 and an error", n, err)
	}
}

type failing struct{}

func (*failing) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
