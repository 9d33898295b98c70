package parser

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/topic"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// hostScope allows the hosts it lists.
type hostScope map[string]bool

func (h hostScope) Allows(_ context.Context, host string) (bool, error) { return h[host], nil }

func newTestService(t *testing.T, set ...func(*Options)) *Service {
	t.Helper()
	// The crawl's defaults, as its flags give them (internal/config).
	o := Options{Scope: hostScope{"a.test": true}, MaxDepth: -1, MaxRedirects: DefaultMaxRedirects,
		MaxURLLength: DefaultMaxURLLength, MaxPathDepth: DefaultMaxPathDepth,
		MaxRepeatedSegments: DefaultMaxRepeatedSegments, MaxQueryParams: DefaultMaxQueryParams, Kinds: DefaultKinds}
	for _, f := range set {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deny is --deny pattern.
func deny(t *testing.T, pattern string) func(*Options) {
	f, err := scope.NewFilter(nil, []string{pattern}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.Filter = f }
}

// dropTracking is --drop-params tracking.
func dropTracking(o *Options) {
	o.Rules.DropParams = append(o.Rules.DropParams, urlx.TrackingParams...)
	o.Rules.DropSessionSegments = true
}

// scoredBy is --topic text --scoring strategy (relevance threshold 2, the
// default).
func scoredBy(t *testing.T, text, strategy string) func(*Options) {
	tp, err := topic.New(text)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := topic.NewScorer(tp, strategy, 2)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.Scorer = sc }
}

func parseHTML(t *testing.T, s *Service, depth int, headers map[string]string, body string) (messages.Parsed, []string, []messages.Link) {
	t.Helper()
	page := messages.Page{URL: "http://a.test/dir/p.html", Status: 200, ContentType: "text/html", Depth: depth, Headers: headers}
	doc, follow, err := s.parse(context.Background(), page, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, l := range follow {
		urls = append(urls, strings.TrimPrefix(l.URL, "http://a.test"))
	}
	return doc, urls, follow
}

func TestParseFollowRules(t *testing.T) {
	s := newTestService(t, deny(t, `/private/`), dropTracking, func(o *Options) { o.Rules.SortQuery, o.Text = true, true })
	body := `<html lang=en><title>T</title><link rel=canonical href="/canon"><h1>Head</h1>
		<a href="/x?utm_source=n&b=2&a=1">x</a> <a href="/nf" rel="nofollow">nf</a> <a href="/private/p">p</a>
		<a href="http://elsewhere.test/">out</a> <a href="/x?a=1&b=2">same as the first once cleaned</a>`
	doc, follow, _ := parseHTML(t, s, 1, nil, body)
	if want := []string{"/x?a=1&b=2"}; !slices.Equal(follow, want) {
		t.Errorf("followed %q, want %q", follow, want)
	}
	if len(doc.Outlinks) != 4 || doc.Queued != 1 { // /x, /nf, /private/p, elsewhere
		t.Errorf("outlinks %q, queued %d", doc.Outlinks, doc.Queued)
	}
	if doc.Canonical != "http://a.test/canon" || doc.Lang != "en" || doc.Title != "T" || !slices.Equal(doc.Headings, []string{"Head"}) || doc.Text == "" {
		t.Errorf("document %+v", doc)
	}
	if doc.Relevance != nil {
		t.Errorf("relevance %v without a topic", *doc.Relevance)
	}
	// Without --parsed-text the document is metadata and links only.
	plain, _, _ := parseHTML(t, newTestService(t), 1, nil, body)
	if plain.Text != "" || plain.Title != "T" || len(plain.Outlinks) == 0 {
		t.Errorf("without --parsed-text: text %q, title %q, %d outlinks", plain.Text, plain.Title, len(plain.Outlinks))
	}
	if s.Stats.NoFollow.Load() != 1 || s.Stats.Filtered.Load() != 1 || s.Stats.OutOfScope.Load() != 1 {
		t.Errorf("stats: nofollow %d, filtered %d, out of scope %d", s.Stats.NoFollow.Load(), s.Stats.Filtered.Load(), s.Stats.OutOfScope.Load())
	}

	// Page-wide nofollow: listed, none followed; noindex: no text.
	for _, tc := range []struct {
		headers map[string]string
		body    string
	}{
		{nil, `<meta name=robots content="noindex,nofollow"><a href=/y>y</a>`},
		{map[string]string{"X-Robots-Tag": "noindex, nofollow"}, `<a href=/y>y</a>`},
	} {
		doc, follow, _ := parseHTML(t, s, 1, tc.headers, tc.body)
		if len(follow) != 0 || len(doc.Outlinks) != 1 || !doc.NoFollow || !doc.NoIndex || doc.Text != "" {
			t.Errorf("nofollow page %+v: followed %q", doc, follow)
		}
	}
}

func TestParseTopicalScores(t *testing.T) {
	onTopic := `<title>Sailing boats</title><p>Our sailing boats and yachts in the harbour.</p><a href=/next>more boats</a>`
	offTopic := `<title>Pasta</title><p>Boil water.</p><a href=/next>sailing boats</a>`

	best := newTestService(t, scoredBy(t, "sailing boats", "best-first"))
	doc, follow, links := parseHTML(t, best, 1, nil, onTopic)
	if doc.Relevance == nil || !doc.Relevant || len(follow) != 1 || links[0].Score <= 0 {
		t.Errorf("best-first, relevant page: relevance %v, followed %+v", doc.Relevance, links)
	}
	if doc, follow, _ := parseHTML(t, best, 1, nil, offTopic); doc.Relevant || len(follow) != 0 {
		t.Errorf("best-first followed %q from an irrelevant page", follow)
	}
	if _, follow, _ := parseHTML(t, best, 0, nil, offTopic); len(follow) != 1 {
		t.Errorf("best-first did not follow a seed's link: %q", follow)
	}

	// SharkSearch follows an irrelevant page's links within the depth
	// bound, scored by their anchors.
	shark := newTestService(t, scoredBy(t, "sailing boats", "sharksearch"))
	_, follow, links = parseHTML(t, shark, 1, nil, offTopic)
	if len(follow) != 1 || links[0].Score <= 0 {
		t.Errorf("sharksearch: followed %+v", links)
	}
	// An anchor that says nothing is scored by the words around it: the
	// parser keeps the links' context for SharkSearch (and only for it).
	bare := `<title>Pasta</title><p>Boil water.</p><p>sailing boats <a href=/next>here</a> sailing boats</p>`
	byContext := newTestService(t, scoredBy(t, "sailing boats", "sharksearch"))
	_, _, links = parseHTML(t, byContext, 1, nil, bare)
	noContext := strings.Replace(bare, "sailing boats <a", "<a", 1)
	noContext = strings.Replace(noContext, "</a> sailing boats", "</a>", 1)
	_, _, without := parseHTML(t, byContext, 1, nil, noContext)
	if len(links) != 1 || len(without) != 1 || links[0].Score <= without[0].Score {
		t.Errorf("sharksearch: the context did not raise the score: %+v against %+v", links, without)
	}
}

func TestParseRedirectKeepsRules(t *testing.T) {
	s := newTestService(t, dropTracking)
	page := messages.Page{URL: "http://a.test/old", Status: 301, Location: "http://a.test/new?utm_source=x", Depth: 2}
	doc, follow, err := s.parse(context.Background(), page, nil)
	if err != nil || len(follow) != 1 || follow[0].URL != "http://a.test/new" || follow[0].Depth != 2 || follow[0].Hops != 1 {
		t.Errorf("redirect: %+v, %+v, %v", doc, follow, err)
	}
}
