// Package fetcher is the fetcher service: stateless workers sharing one
// durable consumer of fetch tasks. For each task it fetches the URL once
// (redirects are not followed: the target is reported on the page and the
// parser sends it to dedup), publishes the page with its raw body, reports the
// task done to the frontier and only then acks the task. A crash before the
// ack redelivers the task; that replay is the only way a URL is fetched twice.
package fetcher

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/ipgate"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// headerRoom is what a page message keeps free of the server's max_payload for
// its headers.
const headerRoom = 64 << 10

// Options wire a fetcher service.
type Options struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	HTTP       HTTPOptions
	Workers    int
	MaxPayload int64 // the NATS server's max_payload; bodies are capped below it
	MaxDeliver int
	// Robots: obey robots.txt unless IgnoreRobots; answers are kept RobotsTTL,
	// unreachable ones retried after RobotsRetry.
	IgnoreRobots bool
	RobotsTTL    time.Duration
	RobotsRetry  time.Duration
	// Sitemaps: the sitemaps robots.txt names on the host's own origin are
	// queued (as sitemap URLs, read by the parser) when it is fetched.
	Sitemaps bool
	// GuessSitemap: with Sitemaps, a robots.txt that names no sitemap
	// gives /sitemap.xml of the host's origin (--sitemap-guess).
	GuessSitemap bool
	// Politeness, to wait between a robots.txt fetch and the page's: the
	// same rule as the frontier's (pkg/politeness).
	Delay         time.Duration
	Factor        float64
	MaxCrawlDelay time.Duration
	MaxGap        time.Duration
	// Per-IP politeness across all fetcher replicas (see pkg/ipgate): at
	// most IPCeiling requests in flight to one address, IPGap between two
	// starts; both zero turn the gate off.
	IPCeiling int
	IPGap     time.Duration
	// LocalIPGate keeps the per-IP table in this process instead of the
	// NATS bucket: for a fetcher no other can share addresses with
	// (`trawler run` without a NATS listener).
	LocalIPGate bool
	// Inbox, when set, brings tasks from the frontier of this process
	// beside those of the fetch stream (frontier.Options.Inbox).
	Inbox *bus.Inbox
	// Ended, when set, hears each task's done report the moment the
	// response has been read, before the page is parsed and the report
	// published (frontier.Service.Ended, in `trawler run`; EndsOnNATS in
	// the services): a host due again at once gets its next task meanwhile.
	Ended func(messages.FetchDone)
	// Backlog: fetching waits while more than this many fetched pages wait
	// for BacklogReaders, consumers of pages.fetched (default: the
	// parser's); 0 turns the limit off (--fetch-backlog, backlog.go).
	Backlog        int
	BacklogReaders []string
	Log            *slog.Logger
	Registerer     prometheus.Registerer // may be nil
	// Now reads the clock of the robots.txt retries and give-ups and of the
	// per-IP gate (default time.Now). Tests inject a manual clock.
	Now func() time.Time
}

// Stats are the service's running totals.
type Stats struct {
	Fetched, Errors, Expired, Bytes           atomic.Int64
	Disallowed, RobotsFetched, RobotsDeferred atomic.Int64
	IPDeferred                                atomic.Int64
	// Truncated counts responses whose body was cut at --max-body (or the
	// compressed cap): their text and links past the cut are lost.
	Truncated atomic.Int64
	// Sitemaps counts the sitemap URLs robots.txt files named and this
	// replica queued (--sitemaps).
	Sitemaps atomic.Int64
	// Redelivered counts deliveries of a task this replica was already
	// working on or had finished: skipped, not fetched again.
	Redelivered atomic.Int64
	// Revisits counts fetches of revisit tasks (a continuous crawl);
	// Unchanged those that found the page unchanged (a 304 or the same
	// digest), NotModified the part answered 304.
	Revisits, Unchanged, NotModified atomic.Int64
	// Republished counts results published again after their first
	// publish failed, in place or on the task's redelivery (unsent.go),
	// not fetched again.
	Republished atomic.Int64
}

// Service is one fetcher replica.
type Service struct {
	o      Options
	client *HTTPClient
	robots *robotsCache // nil with IgnoreRobots
	// robotsView is robots for readers outside Run's goroutines (metrics,
	// the progress line), set once Run opened it.
	robotsView atomic.Pointer[robotsCache]
	ipGate     *ipgate.Gate    // nil: no per-IP limits
	life       context.Context // Run's context: ends on shutdown

	statuses, errKinds *prometheus.CounterVec // nil without a registerer
	perHost            *hostStats
	claims             *claims
	unsent             unsentResults // results whose publish failed, for their redelivery
	refusals           hostSet       // hosts whose refusal was logged
	dlq                bus.DeadLetters
	// keepAliveEvery is how often a task in hand is reported in progress:
	// a third of the fetch consumer's ack wait, at most 15 s.
	keepAliveEvery time.Duration
	// republishFor bounds publishAgain: how long a task is held while its
	// result's publish is retried in place.
	republishFor time.Duration
	backlog      *backlog // nil: no limit
	// handoff parses a page in process (handover.go); nil: pages are
	// published on pages.fetched.
	handoff   func(context.Context, jetstream.Msg)
	handAlone func() bool // nil: hand every page over
	Stats     Stats
}

// New wires a fetcher replica; Run starts it.
func New(o Options) *Service {
	if o.MaxPayload > headerRoom && o.HTTP.MaxBodyBytes > o.MaxPayload-headerRoom {
		o.Log.Info("capping body size below the NATS server's max_payload", "max_body", o.MaxPayload-headerRoom)
		o.HTTP.MaxBodyBytes = o.MaxPayload - headerRoom
	}
	s := &Service{o: o, client: NewHTTPClient(o.HTTP), claims: newClaims(16384), republishFor: republishWindow, dlq: bus.DeadLetters{JS: o.JS, Names: o.Names, Service: "fetcher", MaxDeliver: o.MaxDeliver}}
	if o.Backlog > 0 {
		readers := o.BacklogReaders
		if len(readers) == 0 {
			readers = []string{o.Names.ConsumerParser()}
		}
		s.backlog = newBacklog(o.Backlog, consumerBacklog(o.JS, o.Names.StreamPages(), readers...), backlogPollEvery, 0, o.Log)
	}
	if o.Registerer != nil {
		bus.RegisterCounters(o.Registerer, "fetcher",
			bus.Counter{Name: "pages_total", Help: "Fetches completed with an HTTP response.", Value: &s.Stats.Fetched},
			bus.Counter{Name: "errors_total", Help: "Fetches that failed without a response.", Value: &s.Stats.Errors},
			bus.Counter{Name: "tasks_expired_total", Help: "Tasks dropped because their deadline passed before a worker got them.", Value: &s.Stats.Expired},
			bus.Counter{Name: "body_bytes_total", Help: "Body bytes received.", Value: &s.Stats.Bytes},
			bus.Counter{Name: "truncated_total", Help: "Responses whose body was cut at --max-body: their text and links past the cut are left out.", Value: &s.Stats.Truncated},
			bus.Counter{Name: "robots_disallowed_total", Help: "URLs not fetched because robots.txt forbids them (or stayed unreachable).", Value: &s.Stats.Disallowed},
			bus.Counter{Name: "robots_fetches_total", Help: "robots.txt fetches.", Value: &s.Stats.RobotsFetched},
			bus.Counter{Name: "sitemaps_queued_total", Help: "Sitemap URLs named by robots.txt and queued (--sitemaps).", Value: &s.Stats.Sitemaps},
			bus.Counter{Name: "robots_deferred_total", Help: "Tasks put back because the host's robots.txt was unreachable.", Value: &s.Stats.RobotsDeferred},
			bus.Counter{Name: "revisits_total", Help: "Fetches of URLs visited before (a continuous crawl: --revisit-min/--revisit-max).", Value: &s.Stats.Revisits},
			bus.Counter{Name: "revisits_unchanged_total", Help: "Revisits that found the page unchanged: a 304 Not Modified or a body with the last visit's digest.", Value: &s.Stats.Unchanged},
			bus.Counter{Name: "revisits_not_modified_total", Help: "Revisits answered 304 Not Modified (part of revisits_unchanged_total).", Value: &s.Stats.NotModified},
			bus.Counter{Name: "results_republished_total", Help: "Fetch results published again after the first publish failed (retried in place, or on the task's redelivery), instead of fetching the URL again.", Value: &s.Stats.Republished},
			bus.Counter{Name: "tasks_redelivered_total", Help: "Deliveries of a task this replica was already working on or had finished: skipped, not fetched again.", Value: &s.Stats.Redelivered},
			bus.Counter{Name: "ip_deferred_total", Help: "Tasks put back because their server's IP address was at its per-IP limit.", Value: &s.Stats.IPDeferred},
		)
		s.statuses = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "trawler", Subsystem: "fetcher", Name: "responses_total",
			Help: "Responses by status class."}, []string{"class"})
		s.errKinds = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "trawler", Subsystem: "fetcher", Name: "failures_total",
			Help: "Fetches without a response, by kind (timeout, dns, refused, reset, tls, blocked, protocol, canceled, other)."}, []string{"kind"})
		s.perHost = newHostStats()
		o.Registerer.MustRegister(s.statuses, s.errKinds, s.perHost,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "trawler", Subsystem: "fetcher", Name: "robots_retrying_hosts",
				Help: "Origins whose robots.txt is unreachable and being retried (--robots-retry apart) before they are given up."},
				func() float64 { return float64(s.RobotsUnreachable().Retrying) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Subsystem: "fetcher", Name: "robots_given_up_hosts_total",
				Help: "Origins given up because their robots.txt stayed unreachable (or their name does not resolve): their URLs end as failed, kind robots."},
				func() float64 { return float64(s.RobotsUnreachable().GivenUp) }),
		)
		if b := s.backlog; b != nil {
			o.Registerer.MustRegister(
				prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "trawler", Subsystem: "fetcher", Name: "parse_backlog_pages",
					Help: "Fetched pages not yet parsed (or archived), as last read; fetching waits while it is at --fetch-backlog."},
					func() float64 { return float64(b.lastRead()) }),
				prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Subsystem: "fetcher", Name: "backlog_wait_seconds_total",
					Help: "Time tasks waited for the parse backlog to fall under --fetch-backlog."},
					func() float64 { return time.Duration(b.waitNS.Load()).Seconds() }),
			)
		}
	}
	return s
}

// RobotsUnreachable tells how many origins this replica is retrying for an
// unreachable robots.txt, when the last of them will be given up if it stays
// so, and how many it gave up.
func (s *Service) RobotsUnreachable() RobotsUnreachable {
	if s == nil {
		return RobotsUnreachable{}
	}
	return s.robotsView.Load().unreachableNow() // nil-safe: --ignore-robots, or not running yet
}

// Run fetches until ctx ends, then lets the fetches in hand finish.
func (s *Service) Run(ctx context.Context) error {
	cons, err := bus.Consumer(ctx, s.o.JS, s.o.Names.StreamFetch(), s.o.Names.ConsumerFetcher(), s.o.Log)
	if err != nil {
		return err
	}
	s.life = ctx
	defer bus.KeepBlock(ctx, s.o.JS, s.o.Names.StreamFetch(), s.o.Names.Keeper(s.o.Names.StreamFetch()), s.o.Log)()
	// The ack wait is 2 x --fetch-timeout + 5 s: under 15 s for a fetch
	// timeout under 5 s, when a fixed 15 s keep-alive would let the task
	// be redelivered to another fetcher while this one still fetches.
	s.keepAliveEvery = 15 * time.Second
	if info := cons.CachedInfo(); info != nil && info.Config.AckWait > 0 {
		s.keepAliveEvery = min(s.keepAliveEvery, info.Config.AckWait/3)
	}
	gateOpts := ipgate.Options{Ceiling: s.o.IPCeiling, Gap: s.o.IPGap, LeaseTTL: s.client.opts.Timeout + 30*time.Second, Now: s.o.Now, Keep: ipKeep}
	if s.o.Log != nil {
		gateOpts.Warn = s.o.Log.Warn
	}
	if s.o.LocalIPGate {
		s.ipGate = ipgate.OpenLocal(gateOpts)
	} else if s.ipGate, err = ipgate.Open(ctx, s.o.JS, s.o.Names.IPBucket(), gateOpts); err != nil {
		return err
	}
	defer func() {
		if err := s.ipGate.Close(context.WithoutCancel(ctx)); err != nil && s.o.Log != nil {
			s.o.Log.Warn("giving back per-IP leases failed; they expire by themselves", "err", err)
		}
	}()
	if !s.o.IgnoreRobots {
		if s.robots, err = openRobots(ctx, s.o.JS, s.o.Names, s.client, s.o.HTTP.UserAgent, s.o.RobotsTTL, s.o.RobotsRetry); err != nil {
			return err
		}
		s.robots.now = s.o.Now
		s.robotsView.Store(s.robots)
		s.robots.get = func(ctx context.Context, rawURL string) Response {
			r, wait, err := s.gatedFetch(ctx, rawURL, FetchOptions{}, robotsIPWait)
			if r == nil {
				if err == nil {
					err = fmt.Errorf("server address at its per-IP limit for another %v", wait)
				}
				return Response{Err: err}
			}
			return *r
		}
	}
	msgs, err := bus.Pull(ctx, cons, s.o.Workers)
	if err != nil {
		return err
	}
	// Tasks handed in process come in beside the stream's; once the
	// workers stop, the frontier publishes its tasks again.
	msgs = s.o.Inbox.Merge(ctx, msgs)
	defer s.o.Inbox.Close()
	defer s.client.CloseIdleConnections()
	if b := s.backlog; b != nil {
		b.keepAlive = s.keepAliveEvery
		go b.watch(ctx)
		msgs = b.gate(ctx, msgs)
	}
	bus.Work(ctx, s.o.Workers, holdUntilDue(ctx, msgs), s.dlq.Recover(s.o.Log, s.handle))
	return nil
}

// failed counts a URL that got no response, by kind, with why.
func (s *Service) failed(host, kind, why string) {
	if kind == KindBlocked && s.o.Log != nil && s.refusals.first(host) {
		s.o.Log.Warn("address refused; its URLs are recorded as not fetched", "host", host, "err", why)
	}
	s.Stats.Errors.Add(1)
	if s.errKinds != nil {
		s.errKinds.WithLabelValues(kind).Inc()
		s.perHost.add(host, kind, why)
	}
}

// FailingHosts returns up to n hosts with the most fetches that got no
// response, and the last reason, for the end-of-crawl summary (nil without
// a Registerer: the counts are kept for the metrics).
func (s *Service) FailingHosts(n int) []HostFailures { return s.perHost.topFailing(n) }
