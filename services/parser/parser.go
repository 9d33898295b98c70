// Package parser is the parser service: stateless workers sharing one durable
// consumer of fetched pages. For each page it extracts the links (or takes the
// redirect target), keeps those in scope and within the depth limit, hands
// them to dedup through the host splitter (one message per partition), and
// publishes a parsed document for taps.
package parser

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/splitter"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// Scope decides whether URLs of a host are followed.
type Scope interface {
	Allows(ctx context.Context, host string) (bool, error)
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
	MaxDeliver     int
	// Recent holds back links this parser sent recently (nil: none).
	Recent     *splitter.Recent
	Log        *slog.Logger
	Registerer prometheus.Registerer // may be nil
}

// Stats are the service's running totals.
type Stats struct {
	Pages, Links, Queued, OutOfScope, TooDeep, Invalid atomic.Int64
}

// Service is one parser replica.
type Service struct {
	o     Options
	dlq   bus.DeadLetters
	Stats Stats
}

// New wires a parser replica; Run starts it.
func New(o Options) *Service {
	s := &Service{o: o, dlq: bus.DeadLetters{JS: o.JS, Names: o.Names, Service: "parser", MaxDeliver: o.MaxDeliver}}
	if o.Registerer != nil {
		bus.RegisterCounters(o.Registerer, "parser",
			bus.Counter{Name: "pages_total", Help: "Pages parsed.", Value: &s.Stats.Pages},
			bus.Counter{Name: "links_total", Help: "Links extracted.", Value: &s.Stats.Links},
			bus.Counter{Name: "links_queued_total", Help: "Links handed to dedup.", Value: &s.Stats.Queued},
			bus.Counter{Name: "links_out_of_scope_total", Help: "Links dropped as out of scope.", Value: &s.Stats.OutOfScope},
			bus.Counter{Name: "links_too_deep_total", Help: "Links dropped beyond --max-depth or --max-redirects.", Value: &s.Stats.TooDeep},
		)
		if o.Recent != nil {
			bus.RegisterCounters(o.Registerer, "parser",
				bus.Counter{Name: "splitter_sent_total", Help: "Links sent on to dedup.", Value: &o.Recent.Sent},
				bus.Counter{Name: "splitter_dropped_total", Help: "Links held back because this parser sent them recently (traffic saved).", Value: &o.Recent.Dropped},
			)
		}
	}
	return s
}

// Run parses until ctx ends, then finishes the pages in hand.
func (s *Service) Run(ctx context.Context) error {
	cons, err := bus.Consumer(ctx, s.o.JS, s.o.Names.StreamPages(), s.o.Names.ConsumerParser())
	if err != nil {
		return err
	}
	msgs, err := bus.Pull(ctx, cons, 2*s.o.Workers)
	if err != nil {
		return err
	}
	bus.Work(ctx, s.o.Workers, msgs, s.handle)
	return nil
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
	doc, follow, err := s.parse(ctx, page, m.Data())
	if err != nil {
		// Only scope lookups fail here (NATS trouble): retry later.
		s.o.Log.Warn("parse failed; page will be redelivered", "url", page.URL, "err", err)
		_ = m.NakWithDelay(bus.Backoff(3))
		return
	}
	via := messages.ViaLink
	if page.Location != "" {
		via = messages.ViaRedirect
	}
	follow = s.o.Recent.Filter(follow)
	out, ids := splitter.Split(s.o.Names, s.o.PartitionCount, via, page.URL, "links:"+page.TaskID, follow)
	data, _ := json.Marshal(doc)
	pm := nats.NewMsg(s.o.Names.PagesParsed())
	pm.Data = data
	pm.Header.Set(messages.HeaderSchema, messages.Schema("parsed"))
	out = append(out, pm)
	ids = append(ids, "parsed:"+page.TaskID)
	if err := bus.PublishAll(ctx, s.o.JS, out, ids); err != nil {
		s.o.Log.Warn("publishing parse result failed; page will be redelivered", "url", page.URL, "err", err)
		_ = m.NakWithDelay(bus.Backoff(3))
		return
	}
	s.o.Recent.Commit(follow)
	s.Stats.Pages.Add(1)
	s.Stats.Queued.Add(int64(len(follow)))
	_ = m.Ack()
}

// parse returns the parsed document and the links to follow.
func (s *Service) parse(ctx context.Context, page messages.Page, body []byte) (messages.Parsed, []messages.Link, error) {
	doc := messages.Parsed{
		V: messages.Version, TaskID: page.TaskID, URL: page.URL, Status: page.Status,
		ContentType: page.ContentType, Depth: page.Depth, FetchedAt: page.FetchedAt, Error: page.Error,
		Outlinks: []string{},
	}
	depth, hops := page.Depth+1, 0
	switch {
	case page.Location != "" && page.Status >= 300 && page.Status < 400:
		// A redirect is not a link click: same depth, one more hop.
		if target, err := urlx.Canonicalize(page.Location); err == nil {
			doc.Outlinks = []string{target}
		} else {
			s.Stats.Invalid.Add(1)
		}
		depth, hops = page.Depth, page.Hops+1
	case page.Status >= 200 && page.Status < 300 && IsHTML(page.ContentType, body):
		ex, err := Extract(body, page.URL)
		if err != nil {
			doc.Error = fmt.Sprintf("parse: %v", err)
		}
		doc.Title, doc.Outlinks = ex.Title, append(doc.Outlinks, ex.Links...)
		s.Stats.Invalid.Add(int64(ex.Dropped))
	}
	s.Stats.Links.Add(int64(len(doc.Outlinks)))

	if (s.o.MaxDepth >= 0 && depth > s.o.MaxDepth) || hops > s.o.MaxRedirects {
		s.Stats.TooDeep.Add(int64(len(doc.Outlinks)))
		return doc, nil, nil
	}
	var follow []messages.Link
	for _, link := range doc.Outlinks {
		if len(link) > s.o.MaxURLLength {
			s.Stats.Invalid.Add(1)
			continue
		}
		host, err := urlx.Host(link)
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
		follow = append(follow, messages.Link{URL: link, Depth: depth, Hops: hops})
	}
	doc.Queued = len(follow)
	return doc, follow, nil
}
