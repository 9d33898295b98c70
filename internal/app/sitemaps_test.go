package app_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// run --sitemaps: robots.txt names a sitemap index; the index lists a
// gzipped URL set and a broken one; the pages they list, linked from
// nowhere, are crawled, the broken sitemap's entries before the break too,
// and its parsed document says what broke. Without the flag, none of them.
func TestRunReadsSitemaps(t *testing.T) {
	site := testsite.New()
	h := site.AddHost(t, "docs.test", "127.0.0.1")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>` + h.URL("/orphan1") + `</loc><lastmod>2026-11-01</lastmod></url>
<url><loc>` + h.URL("/orphan2") + `</loc></url>
</urlset>`))
	zw.Close()
	h.Set("/robots.txt", testsite.Page{Type: "text/plain", Body: "User-agent: *\nAllow: /\nSitemap: " + h.URL("/sitemap_index.xml") + "\n"})
	h.Set("/", testsite.Page{})
	h.Set("/sitemap_index.xml", testsite.Page{Type: "application/xml", Body: `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>` + h.URL("/sitemap1.xml.gz") + `</loc></sitemap>
<sitemap><loc>` + h.URL("/sitemap2.xml") + `</loc></sitemap>
</sitemapindex>`})
	h.Set("/sitemap1.xml.gz", testsite.Page{Type: "application/gzip", Body: gz.String()})
	h.Set("/sitemap2.xml", testsite.Page{Type: "text/xml", Body: "<urlset>\n<url><loc>" + h.URL("/orphan3") + "</loc></url>\n<url><loc>" + h.URL("/never")})
	for _, p := range []string{"/orphan1", "/orphan2", "/orphan3", "/never"} {
		h.Set(p, testsite.Page{})
	}

	crawl := func(on bool) (map[string]int, map[string]messages.Parsed) {
		t.Helper()
		cfg := testConfig(t, []string{h.URL("/")})
		cfg.IgnoreRobots = false
		cfg.Sitemaps = on
		cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
		before := site.Requests()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
			t.Fatalf("RunAll: %v", err)
		}
		requested := map[string]int{}
		for u, n := range site.Requests() {
			if d := n - before[u]; d > 0 {
				requested[strings.TrimPrefix(u, h.Base)] = d
			}
		}
		docs := readParsed(t, cfg.Out, h.Base)
		return requested, docs
	}

	requested, docs := crawl(true)
	for _, p := range []string{"/sitemap_index.xml", "/sitemap1.xml.gz", "/sitemap2.xml", "/orphan1", "/orphan2", "/orphan3"} {
		if requested[p] != 1 {
			t.Errorf("%s requested %d times, want 1 (requests: %v)", p, requested[p], requested)
		}
	}
	if requested["/never"] != 0 {
		t.Errorf("/never, cut off in the broken sitemap, was requested")
	}
	if d := docs["/sitemap_index.xml"]; len(d.Outlinks) != 2 || d.Queued != 2 || d.Error != "" {
		t.Errorf("index document: outlinks %v, queued %d, error %q", d.Outlinks, d.Queued, d.Error)
	}
	if d := docs["/sitemap2.xml"]; !strings.Contains(d.Error, "not well-formed XML at line 3") || d.Queued != 1 {
		t.Errorf("broken sitemap's document: error %q, queued %d; want the XML error and its one entry", d.Error, d.Queued)
	}

	requested, _ = crawl(false)
	for p := range requested {
		if strings.HasPrefix(p, "/orphan") || strings.HasPrefix(p, "/sitemap") {
			t.Errorf("without --sitemaps, %s was requested", p)
		}
	}
}

// run --sitemaps --sitemap-guess: a robots.txt that names no sitemap gives
// /sitemap.xml, whose orphan page is crawled; without the guess it is not.
func TestRunGuessesSitemap(t *testing.T) {
	site := testsite.New()
	h := site.AddHost(t, "guess.test", "127.0.0.1")
	h.Set("/robots.txt", testsite.Page{Type: "text/plain", Body: "User-agent: *\nAllow: /\n"})
	h.Set("/", testsite.Page{})
	h.Set("/sitemap.xml", testsite.Page{Type: "application/xml", Body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>` + h.URL("/orphan") + `</loc></url></urlset>`})
	h.Set("/orphan", testsite.Page{})
	for _, guess := range []bool{false, true} {
		cfg := testConfig(t, []string{h.URL("/")})
		cfg.IgnoreRobots = false
		cfg.Sitemaps, cfg.SitemapGuess = true, guess
		before := site.Requests()[h.URL("/orphan")]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
			cancel()
			t.Fatalf("RunAll: %v", err)
		}
		cancel()
		if got := site.Requests()[h.URL("/orphan")] - before; (got == 1) != guess {
			t.Errorf("--sitemap-guess %v: the orphan was requested %d times", guess, got)
		}
	}
}
