package parser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

func parseSitemap(t *testing.T, s *Service, hops int, body string) (messages.Parsed, []messages.Link) {
	t.Helper()
	page := messages.Page{URL: "http://a.test/sitemap.xml", Host: "a.test", Status: 200, ContentType: "application/xml", Depth: 1, Hops: hops, Sitemap: true}
	doc, follow, err := s.parse(context.Background(), page, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc, follow
}

func TestParseSitemaps(t *testing.T) {
	s := newTestService(t, deny(t, `/private/`))
	doc, follow := parseSitemap(t, s, 0, `<urlset><url><loc>http://a.test/x</loc></url><url><loc>http://a.test/private/y</loc></url>
		<url><loc>http://elsewhere.test/z</loc></url><url><loc>not a url</loc></url></urlset>`)
	if len(follow) != 1 || follow[0].URL != "http://a.test/x" || follow[0].Depth != 2 || follow[0].Sitemap {
		t.Errorf("urlset: follow %+v; want http://a.test/x at depth 2, a page (deny and scope applied)", follow)
	}
	if len(doc.Outlinks) != 3 || doc.Error != "" {
		t.Errorf("urlset document: outlinks %v, error %q", doc.Outlinks, doc.Error)
	}

	index := `<sitemapindex><sitemap><loc>http://a.test/s1.xml</loc></sitemap></sitemapindex>`
	_, follow = parseSitemap(t, s, 0, index)
	if len(follow) != 1 || !follow[0].Sitemap || follow[0].Depth != 1 || follow[0].Hops != 1 {
		t.Errorf("index: follow %+v; want one sitemap at the index's depth, one hop", follow)
	}
	doc, follow = parseSitemap(t, s, 1, index)
	if len(follow) != 0 || !strings.Contains(doc.Error, "one level of index") {
		t.Errorf("index in an index: follow %+v, error %q", follow, doc.Error)
	}

	doc, follow = parseSitemap(t, s, 0, "<html><body>Not found</body></html>")
	if len(follow) != 0 || !strings.Contains(doc.Error, "neither urlset nor sitemapindex") {
		t.Errorf("an HTML page for a sitemap: follow %+v, error %q", follow, doc.Error)
	}
	if n := s.Stats.SitemapErrors.Load(); n != 1 {
		t.Errorf("sitemap_errors_total %d, want 1", n)
	}
}

// A sitemap's lastmod and changefreq travel with its URLs as revisit hints
// (they seed a continuous crawl's first interval); an entry without them
// has none.
func TestSitemapHints(t *testing.T) {
	s := newTestService(t)
	_, follow := parseSitemap(t, s, 0, `<urlset><url><loc>http://a.test/x</loc><lastmod>2026-11-01T10:00:00+02:00</lastmod><changefreq>Daily</changefreq></url>
		<url><loc>http://a.test/y</loc></url></urlset>`)
	if len(follow) != 2 {
		t.Fatalf("follow %+v", follow)
	}
	h := follow[0].Revisit
	if h == nil || h.ChangeFreq != "daily" || !h.Lastmod.Equal(time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)) || h.Visits != 0 {
		t.Errorf("hints of %s: %+v", follow[0].URL, h)
	}
	if follow[1].Revisit != nil {
		t.Errorf("an entry without hints got %+v", follow[1].Revisit)
	}
}
