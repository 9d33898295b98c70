package parser

import (
	"context"
	"fmt"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/topic"
	"github.com/trawlerhq/trawler/pkg/traps"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// Which of a page's links are followed: depth and redirect hops, nofollow,
// topical scores, the trap limits, allow/deny patterns and the scope.

// parse returns the parsed document and the links to follow.
func (s *Service) parse(ctx context.Context, page messages.Page, body []byte) (messages.Parsed, []messages.Link, error) {
	doc := messages.Parsed{
		TaskID: page.TaskID, URL: page.URL, Status: page.Status,
		ContentType: page.ContentType, Depth: page.Depth, FetchedAt: page.FetchedAt, Error: page.Error,
		Outlinks: []string{},
		Changed:  page.Changed, // a revisit's: false for a 304 or the same payload
	}
	depth, hops := page.Depth+1, 0
	var links []Link
	var scores []topic.LinkScore
	switch {
	case page.Location != "" && page.Status >= 300 && page.Status < 400:
		// A redirect is not a link click: same depth, one more hop, and the
		// target takes the place (and the score) of the URL that moved.
		if target, err := urlx.Canonicalize(page.Location); err == nil && len(target) > s.o.MaxURLLength && s.o.MaxURLLength > 0 {
			s.Stats.exclude(traps.URLLength, 1) // not an outlink either (issue 19)
			doc.Error = joinError(doc.Error, fmt.Sprintf("redirect target of %d bytes over --max-url-length %d", len(target), s.o.MaxURLLength))
		} else if err == nil {
			links = s.applyRules([]Link{{URL: target}})
			p := s.lineage.parent(page.URL, 0, s.scorer)
			scores = []topic.LinkScore{{Score: p.Score, DepthLeft: p.DepthLeft, Follow: true}}
		} else {
			s.Stats.Invalid.Add(1)
		}
		depth, hops = page.Depth, page.Hops+1
	case page.Sitemap && page.Status >= 200 && page.Status < 300:
		var index bool
		links, index = s.readSitemap(&doc, page, body)
		if index {
			// Sitemaps listed by an index: the index's depth, one more
			// level of index (hops), as a redirect counts hops.
			depth, hops = page.Depth, page.Hops+1
		}
		parent := s.lineage.parent(page.URL, 0, s.scorer)
		scores = s.scorer.Score(parent, make([]topic.Anchor, len(links)))
	case page.Status >= 200 && page.Status < 300 && IsHTML(page.ContentType, body):
		ex, err := Extract(Page{URL: page.URL, Body: body, ContentType: page.ContentType, Headers: page.Headers, MaxURLLength: s.o.MaxURLLength,
			NoLinkContext: s.scorer.Strategy != topic.SharkSearch}, s.o.Kinds)
		if err != nil {
			doc.Error = fmt.Sprintf("parse: %v", err)
		}
		doc.Title, doc.Headings, doc.Lang, doc.Charset = ex.Title, ex.Headings, ex.Lang, ex.Charset
		doc.Canonical, doc.NoIndex, doc.NoFollow = ex.Canonical, ex.NoIndex, ex.NoFollow
		if !ex.NoIndex && s.o.Text {
			doc.Text = ex.Text
		}
		s.Stats.Invalid.Add(int64(ex.Dropped))
		s.Stats.exclude(traps.URLLength, int64(ex.TooLong))
		doc.Truncated = ex.Truncated
		s.markNearDuplicate(&doc, page.Host, ex.Text)
		links = s.applyRules(ex.Links)
		var relevance float64
		if s.scorer.Topic != nil {
			relevance = s.scorer.Topic.Relevance(ex.Title, ex.Text)
			doc.Relevance, doc.Relevant = &relevance, s.scorer.Relevant(relevance)
			if doc.Relevant {
				s.Stats.Relevant.Add(1)
			}
		}
		anchors := make([]topic.Anchor, len(links))
		for i, l := range links {
			anchors[i] = topic.Anchor{Text: l.Anchor, Context: l.Context}
		}
		parent := s.lineage.parent(page.URL, relevance, s.scorer)
		parent.Seed = page.Depth == 0
		scores = s.scorer.Score(parent, anchors)
	}
	for _, l := range links {
		doc.Outlinks = append(doc.Outlinks, l.URL)
	}
	s.Stats.Links.Add(int64(len(doc.Outlinks)))

	if (s.o.MaxDepth >= 0 && depth > s.o.MaxDepth) || hops > s.o.MaxRedirects {
		s.Stats.TooDeep.Add(int64(len(doc.Outlinks)))
		return doc, nil, nil
	}
	if doc.NoFollow {
		s.Stats.NoFollow.Add(int64(len(links)))
		return doc, nil, nil
	}
	if doc.NearDuplicateOf != "" && s.o.NearDuplicates.SkipLinks {
		s.Stats.NearDuplicateLinks.Add(int64(len(links)))
		return doc, nil, nil
	}
	var follow []messages.Link
	for i, link := range links {
		switch {
		case link.NoFollow:
			s.Stats.NoFollow.Add(1)
			continue
		case !scores[i].Follow:
			s.Stats.NotRelevant.Add(1)
			continue
		}
		if r := s.limits.Check(link.URL); r != traps.Allowed {
			s.Stats.exclude(r, 1)
			continue
		}
		if s.o.Filter.Check(link.URL) != scope.Allowed {
			s.Stats.exclude(traps.Pattern, 1)
			continue
		}
		host, err := urlx.Host(link.URL)
		if err != nil {
			continue
		}
		ok, err := s.o.Scope.Allows(ctx, host)
		if err != nil {
			return doc, nil, err
		}
		if !ok {
			s.Stats.OutOfScope.Add(1)
			continue
		}
		follow = append(follow, messages.Link{URL: link.URL, Depth: depth, Hops: hops, Score: scores[i].Score, Sitemap: link.Sitemap, Revisit: link.Hints})
		s.lineage.remember(link.URL, scores[i].Score, scores[i].DepthLeft)
	}
	doc.Queued = len(follow)
	return doc, follow, nil
}

// applyRules applies the crawl's optional canonical rules to the links,
// merging those that become equal.
func (s *Service) applyRules(links []Link) []Link {
	if !s.o.Rules.Active() {
		return links
	}
	out := links[:0]
	seen := make(map[string]bool, len(links))
	for _, l := range links {
		l.URL = s.o.Rules.Apply(l.URL)
		if !seen[l.URL] {
			seen[l.URL] = true
			out = append(out, l)
		}
	}
	return out
}
