package parser

// Sitemap files (--sitemaps): a fetched page whose task was a sitemap URL is
// read with pkg/sitemap, and its entries become the page's links, followed
// under the same rules as a page's (canonical rules, trap limits, allow and
// deny, scope, depth).

import (
	"bytes"
	"fmt"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/sitemap"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// readSitemap returns the links a sitemap file lists and whether it is an
// index (its links are sitemaps). A file that cannot be read whole gives the
// entries before the error, and doc.Error says what went wrong, in one
// line, as does the log. An index inside an index is not followed: the
// protocol allows one level.
func (s *Service) readSitemap(doc *messages.Parsed, page messages.Page, body []byte) ([]Link, bool) {
	s.Stats.Sitemaps.Add(1)
	var links []Link
	invalid := 0
	kind, err := sitemap.Parse(bytes.NewReader(body), sitemap.Limits{}, func(e sitemap.Entry) error {
		u, err := urlx.Canonicalize(e.Loc)
		if err != nil || (s.o.MaxURLLength > 0 && len(u) > s.o.MaxURLLength) {
			invalid++
			return nil
		}
		l := Link{URL: u}
		if !e.LastMod.IsZero() || e.ChangeFreq != "" {
			l.Hints = &messages.Revisit{ChangeFreq: e.ChangeFreq, Lastmod: e.LastMod.UTC()}
		}
		links = append(links, l)
		return nil
	})
	s.Stats.Invalid.Add(int64(invalid))
	if kind == sitemap.Index {
		for i := range links {
			links[i].Sitemap = true
		}
		if page.Hops > 0 {
			doc.Error = joinError(doc.Error, fmt.Sprintf("sitemap index listed by a sitemap index: its %d sitemaps are not read (one level of index)", len(links)))
			links = nil
		}
	}
	if err != nil {
		if page.Truncated {
			err = fmt.Errorf("%w (the file was cut at --max-body)", err)
		}
		s.Stats.SitemapErrors.Add(1)
		doc.Error = joinError(doc.Error, err.Error())
		if s.o.Log != nil {
			s.o.Log.Warn("sitemap not read whole; the entries before the error are used", "url", page.URL, "entries", len(links), "err", err)
		}
	}
	s.Stats.SitemapURLs.Add(int64(len(links)))
	return s.applyRules(links), kind == sitemap.Index
}
