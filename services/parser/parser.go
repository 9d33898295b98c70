// Package parser is the parser service: stateless workers sharing one durable
// consumer of fetched pages. For each page it extracts the links (or takes the
// redirect target), keeps those in scope and within the depth limit, hands
// them to dedup through the host splitter (one message per partition), and
// publishes a parsed document for taps.
package parser

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/splitter"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/topic"
	"github.com/trawlerhq/trawler/pkg/traps"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// Scope decides whether URLs of a host are followed.
type Scope interface {
	Allows(ctx context.Context, host string) (bool, error)
}

// Observer sees the links a parser hands the host splitter, for a study of
// the crawl beside it (the cache study's recorder,
// internal/cachestudy/record). Workers call it concurrently, so it must be
// safe for concurrent use; it must not keep or change links, and it should
// return quickly: the page waits for it.
type Observer interface {
	// Links is called once per parsed page (source is its URL) with the
	// links to follow, canonical and filtered, before the recent-links cache
	// (Options.Recent) holds any back. A redelivered page is seen again.
	Links(source string, links []messages.Link)
}

// Options wire a parser service.
type Options struct {
	JS             jetstream.JetStream
	Names          subjects.Names
	Scope          Scope
	PartitionCount int
	Workers        int
	MaxDepth       int // -1: no limit
	MaxRedirects   int
	MaxURLLength   int
	// The trap limits (pkg/traps; 0: none): path segments, occurrences of
	// one segment in the path, query parameters.
	MaxPathDepth        int
	MaxRepeatedSegments int
	MaxQueryParams      int
	MaxDeliver          int
	// Kinds are the link kinds extracted (0: DefaultKinds).
	Kinds Kind
	// Text puts the page's visible text in the parsed document. Off by
	// default: the text is most of a document's bytes, and the parsed
	// stream is retained for taps (--parsed-text).
	Text bool
	// Rules are the crawl's optional canonical rules (query sorting,
	// dropped parameters), applied to every extracted link.
	Rules urlx.Rules
	// Filter holds the allow and deny patterns (nil: none).
	Filter *scope.Filter
	// Scorer scores links for the frontier (nil: breadth-first, score 0).
	Scorer *topic.Scorer
	// Recent holds back links this parser sent recently (nil: none).
	Recent *splitter.Recent
	// Observer, when set, sees the links of every page before Recent
	// holds any back (nil: none).
	Observer Observer
	// NearDuplicates, when set, fingerprints every HTML page's text and
	// marks a page near_duplicate_of an earlier one of its host (nil: off).
	NearDuplicates *NearDuplicates
	Log            *slog.Logger
	Registerer     prometheus.Registerer // may be nil
}

// Defaults of the limits in Options, as the crawl's flags give them
// (internal/config maps the flags onto Options).
const (
	DefaultMaxURLLength        = 256
	DefaultMaxPathDepth        = 20
	DefaultMaxRepeatedSegments = 2
	DefaultMaxQueryParams      = 20
	DefaultMaxRedirects        = 5
)

// Stats are the service's running totals.
type Stats struct {
	Pages, Links, Queued, OutOfScope, TooDeep, Invalid atomic.Int64
	// NoFollow counts links not followed for rel=nofollow or the page's
	// robots directives; NotRelevant those the scoring strategy turned
	// down; Filtered those excluded by the length bound, the trap limits or
	// the allow/deny patterns (the sum of Excluded). Relevant counts pages
	// above the topic threshold.
	NoFollow, NotRelevant, Filtered, Relevant atomic.Int64
	// NearDuplicates counts pages marked near_duplicate_of an earlier page;
	// NearDuplicateLinks the links not followed on them (SkipLinks).
	NearDuplicates, NearDuplicateLinks atomic.Int64
	// Sitemaps counts the sitemap files read, SitemapURLs the URLs they
	// listed, SitemapErrors the files that could not be read whole.
	Sitemaps, SitemapURLs, SitemapErrors atomic.Int64
	// Excluded counts the links Filtered counts, by reason (traps.Reason).
	Excluded [traps.NumReasons]atomic.Int64
}

// exclude counts n links excluded for reason r.
func (st *Stats) exclude(r traps.Reason, n int64) {
	if n == 0 {
		return
	}
	st.Excluded[r].Add(n)
	st.Filtered.Add(n)
}

// Service is one parser replica.
type Service struct {
	o       Options
	limits  traps.Limits
	dlq     bus.DeadLetters
	scorer  *topic.Scorer
	lineage *lineage  // SharkSearch only
	dups    *nearDups // nil: near-duplicates off
	docsTo  func(taskID string, doc []byte) error
	pagesTo func(jetstream.Msg) error
	unread  func() // set: pages.parsed has no possible reader (CountDocsIn)
	Stats   Stats
}

// CountDocsIn makes the parser publish no document on pages.parsed and call
// count for each instead, once the page's links are published: for `trawler
// run` when nothing can ever read the stream (no NATS listener, no consumer
// on it, its retention by interest, which drops what no consumer wants).
// The crawl's page count then comes from count (store.Bolt's
// CountParsedInProcess). Call it before Run.
func (s *Service) CountDocsIn(count func()) {
	s.unread = count
}

// ArchivePagesTo makes the parser give every page message it handles to
// archive before it parses it (`trawler run --archive` when nothing else
// can read pages.fetched: archive.Archive.HandPage). An error hands the
// page back, to come again. Call it before Run.
func (s *Service) ArchivePagesTo(archive func(jetstream.Msg) error) {
	s.pagesTo = archive
}

// HandDocsTo makes the parser give every document, text included, to
// write before it publishes the page's links, and publish the document
// without its text: for `trawler run --out` and `--archive` when nothing
// else can read pages.parsed, whose files then get their lines without the
// stream storing them (archive.Out.Write, archive.Archive.HandDoc). An
// error from write hands the page back, to be parsed again. Call it before
// Run.
func (s *Service) HandDocsTo(write func(taskID string, doc []byte) error) {
	s.docsTo = write
}

// lineageSize bounds the links whose SharkSearch state a parser remembers
// (per generation; about 40 bytes each).
const lineageSize = 1 << 18

// New wires a parser replica; Run starts it. It fails only on options that
// cannot work (NearDuplicates out of range).
func New(o Options) (*Service, error) {
	if o.Kinds == 0 {
		o.Kinds = DefaultKinds
	}
	s := &Service{o: o, scorer: o.Scorer, dlq: bus.DeadLetters{JS: o.JS, Names: o.Names, Service: "parser", MaxDeliver: o.MaxDeliver}}
	s.limits = traps.Limits{MaxURLLength: o.MaxURLLength, MaxPathDepth: o.MaxPathDepth, MaxRepeatedSegments: o.MaxRepeatedSegments, MaxQueryParams: o.MaxQueryParams}
	if s.scorer == nil {
		s.scorer, _ = topic.NewScorer(nil, topic.BreadthFirst, 0)
	}
	if s.scorer.Strategy != topic.BreadthFirst {
		s.lineage = newLineage(lineageSize)
	}
	if o.NearDuplicates != nil {
		var err error
		if s.dups, err = newNearDups(*o.NearDuplicates); err != nil {
			return nil, err
		}
	}
	if o.Registerer != nil {
		bus.RegisterCounters(o.Registerer, "parser",
			bus.Counter{Name: "pages_total", Help: "Pages parsed.", Value: &s.Stats.Pages},
			bus.Counter{Name: "links_total", Help: "Links extracted.", Value: &s.Stats.Links},
			bus.Counter{Name: "links_queued_total", Help: "Links handed to dedup.", Value: &s.Stats.Queued},
			bus.Counter{Name: "links_out_of_scope_total", Help: "Links dropped as out of scope.", Value: &s.Stats.OutOfScope},
			bus.Counter{Name: "links_too_deep_total", Help: "Links dropped beyond --max-depth or --max-redirects.", Value: &s.Stats.TooDeep},
			bus.Counter{Name: "links_nofollow_total", Help: "Links not followed for rel=nofollow, meta robots or X-Robots-Tag.", Value: &s.Stats.NoFollow},
			bus.Counter{Name: "links_not_relevant_total", Help: "Links the topical scoring strategy did not follow.", Value: &s.Stats.NotRelevant},
			bus.Counter{Name: "links_filtered_total", Help: "Links excluded by --max-url-length, the trap limits or --allow/--deny (the sum of links_excluded_total).", Value: &s.Stats.Filtered},
			bus.Counter{Name: "pages_relevant_total", Help: "Pages above the topic's relevance threshold.", Value: &s.Stats.Relevant},
			bus.Counter{Name: "sitemaps_total", Help: "Sitemap files read (--sitemaps).", Value: &s.Stats.Sitemaps},
			bus.Counter{Name: "sitemap_urls_total", Help: "URLs listed by the sitemap files read.", Value: &s.Stats.SitemapURLs},
			bus.Counter{Name: "sitemap_errors_total", Help: "Sitemap files that could not be read whole (the entries before the error are used).", Value: &s.Stats.SitemapErrors},
			bus.Counter{Name: "pages_near_duplicate_total", Help: "Pages marked near_duplicate_of an earlier page of their host.", Value: &s.Stats.NearDuplicates},
			bus.Counter{Name: "links_near_duplicate_total", Help: "Links not followed because their page is a near-duplicate (--near-duplicate-skip-links).", Value: &s.Stats.NearDuplicateLinks},
		)
		for _, r := range traps.Excluded() {
			v := &s.Stats.Excluded[r]
			o.Registerer.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "trawler", Subsystem: "parser", Name: "links_excluded_total",
				Help:        "Links not followed for a limit: url_length (--max-url-length), path_depth (--max-path-depth), repeated_segment (--max-repeated-segments), query_params (--max-query-params), pattern (--allow/--deny).",
				ConstLabels: prometheus.Labels{"reason": r.String()},
			}, func() float64 { return float64(v.Load()) }))
		}
		if o.Recent != nil {
			bus.RegisterCounters(o.Registerer, "parser",
				bus.Counter{Name: "splitter_sent_total", Help: "Links sent on to dedup.", Value: &o.Recent.Sent},
				bus.Counter{Name: "splitter_dropped_total", Help: "Links held back because this parser sent them recently (traffic saved).", Value: &o.Recent.Dropped},
			)
		}
	}
	return s, nil
}

// Run parses until ctx ends, then finishes the pages in hand.
func (s *Service) Run(ctx context.Context) error {
	cons, err := bus.Consumer(ctx, s.o.JS, s.o.Names.StreamPages(), s.o.Names.ConsumerParser(), s.o.Log)
	if err != nil {
		return err
	}
	msgs, err := bus.Pull(ctx, cons, 2*s.o.Workers)
	if err != nil {
		return err
	}
	bus.Work(ctx, s.o.Workers, msgs, s.dlq.Recover(s.o.Log, s.handle))
	return nil
}

// Handle parses one page message, as a delivery from pages.fetched would be:
// for a fetcher that hands its pages over in process (`run`). It settles m
// (Ack, Nak with a delay, or Term once dead-lettered) before returning, a
// panic included.
func (s *Service) Handle(ctx context.Context, m jetstream.Msg) {
	s.dlq.Recover(s.o.Log, s.handle)(ctx, m)
}

func (s *Service) handle(ctx context.Context, m jetstream.Msg) {
	page, err := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
	if err == nil && s.dlq.CrashLooping(m) {
		err = fmt.Errorf("delivered more than %d times without being acked", s.o.MaxDeliver)
	}
	if err != nil {
		s.dlq.ParkOrLog(ctx, m, err.Error(), s.o.Log)
		return
	}
	if s.pagesTo != nil {
		if err := s.pagesTo(m); err != nil {
			s.o.Log.Warn("archiving the page failed; page will be redelivered", "url", page.URL, "err", err)
			_ = m.NakWithDelay(bus.Backoff(3))
			return
		}
	}
	doc, follow, err := s.parse(ctx, page, m.Data())
	if err != nil {
		// Only scope lookups fail here (NATS trouble): retry later.
		s.o.Log.Warn("parse failed; page will be redelivered", "url", page.URL, "err", err)
		_ = m.NakWithDelay(bus.Backoff(3))
		return
	}
	via := messages.ViaLink
	switch {
	case page.Location != "":
		via = messages.ViaRedirect
	case page.Sitemap:
		via = messages.ViaSitemap
	}
	if s.o.Observer != nil {
		s.o.Observer.Links(page.URL, follow)
	}
	follow = s.o.Recent.Filter(follow)
	// Every message must fit the server's max_payload: a document or a
	// link batch over it is refused for good (issue 19: a 160 MB document
	// was retried 10 times, dead-lettered, and left no record).
	limit := s.payloadLimit()
	out, ids, follow := s.split(&doc, page, via, follow, limit)
	var data []byte
	if s.docsTo != nil || s.unread == nil {
		data = fitDocument(&doc, limit)
	}
	if s.docsTo != nil {
		if err := s.docsTo(page.TaskID, data); err != nil {
			s.o.Log.Warn("writing the parsed document failed; page will be redelivered", "url", page.URL, "err", err)
			_ = m.NakWithDelay(bus.Backoff(3))
			return
		}
		if doc.Text != "" && s.unread == nil {
			doc.Text = ""
			data, _ = messages.Encode(&doc)
		}
	}
	pm := nats.NewMsg(s.o.Names.PagesParsed())
	pm.Data = data
	pm.Header.Set(messages.HeaderSchema, messages.Schema(messages.KindParsed))
	if s.unread == nil {
		out = append(out, pm)
		ids = append(ids, "parsed:"+page.TaskID)
	}
	err = bus.PublishAll(ctx, s.o.JS, out, ids)
	if bus.TooLarge(err) {
		// Permanent for this page (a stream's max message size, say):
		// publish its record without what may be large, and say why.
		s.o.Log.Warn("parsed document refused for its size; recorded without text and outlinks", "url", page.URL, "bytes", len(data), "err", err)
		bare := bareDocument(doc, fmt.Sprintf("parsed document of %d bytes refused for its size (%v): text and outlinks left out", len(data), err))
		pm.Data, _ = messages.Encode(&bare)
		err = bus.PublishAll(ctx, s.o.JS, []*nats.Msg{pm}, []string{"parsed:" + page.TaskID})
	}
	if bus.TooLarge(err) {
		s.dlq.ParkOrLog(ctx, m, fmt.Sprintf("parsed document refused for its size even without text and outlinks: %v", err), s.o.Log)
		return
	}
	if err != nil {
		s.o.Log.Warn("publishing parse result failed; page will be redelivered", "url", page.URL, "err", err)
		_ = m.NakWithDelay(bus.Backoff(3))
		return
	}
	if s.unread != nil {
		s.unread()
	}
	s.o.Recent.Commit(follow)
	s.Stats.Pages.Add(1)
	s.Stats.Queued.Add(int64(len(follow)))
	_ = m.Ack()
}
