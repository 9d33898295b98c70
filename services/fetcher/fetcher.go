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
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/ipgate"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/politeness"
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
	// Politeness, to wait between a robots.txt fetch and the page's: the
	// same rule as the frontier's (pkg/politeness).
	Delay         time.Duration
	Factor        float64
	MaxCrawlDelay time.Duration
	MaxGap        time.Duration
	// Per-IP politeness across all fetcher replicas (see pkg/ipgate): at
	// most IPCeiling requests in flight to one address, IPGap between two
	// starts; both zero turn the gate off.
	IPCeiling  int
	IPGap      time.Duration
	Log        *slog.Logger
	Registerer prometheus.Registerer // may be nil
	// Now reads the clock of the robots.txt retries and give-ups and of the
	// per-IP gate (default time.Now). Tests inject a manual clock.
	Now func() time.Time
}

// Stats are the service's running totals.
type Stats struct {
	Fetched, Errors, Expired, Bytes           atomic.Int64
	Disallowed, RobotsFetched, RobotsDeferred atomic.Int64
	IPDeferred                                atomic.Int64
	// Redelivered counts deliveries of a task this replica was already
	// working on or had finished: skipped, not fetched again.
	Redelivered atomic.Int64
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
	refusals           hostSet // hosts whose refusal was logged
	dlq                bus.DeadLetters
	// keepAliveEvery is how often a task in hand is reported in progress:
	// a third of the fetch consumer's ack wait, at most 15 s.
	keepAliveEvery time.Duration
	Stats          Stats
}

// New wires a fetcher replica; Run starts it.
func New(o Options) *Service {
	if o.MaxPayload > headerRoom && o.HTTP.MaxBodyBytes > o.MaxPayload-headerRoom {
		o.Log.Info("capping body size below the NATS server's max_payload", "max_body", o.MaxPayload-headerRoom)
		o.HTTP.MaxBodyBytes = o.MaxPayload - headerRoom
	}
	s := &Service{o: o, client: NewHTTPClient(o.HTTP), claims: newClaims(16384), dlq: bus.DeadLetters{JS: o.JS, Names: o.Names, Service: "fetcher", MaxDeliver: o.MaxDeliver}}
	if o.Registerer != nil {
		bus.RegisterCounters(o.Registerer, "fetcher",
			bus.Counter{Name: "pages_total", Help: "Fetches completed with an HTTP response.", Value: &s.Stats.Fetched},
			bus.Counter{Name: "errors_total", Help: "Fetches that failed without a response.", Value: &s.Stats.Errors},
			bus.Counter{Name: "tasks_expired_total", Help: "Tasks dropped because their deadline passed before a worker got them.", Value: &s.Stats.Expired},
			bus.Counter{Name: "body_bytes_total", Help: "Body bytes received.", Value: &s.Stats.Bytes},
			bus.Counter{Name: "robots_disallowed_total", Help: "URLs not fetched because robots.txt forbids them (or stayed unreachable).", Value: &s.Stats.Disallowed},
			bus.Counter{Name: "robots_fetches_total", Help: "robots.txt fetches.", Value: &s.Stats.RobotsFetched},
			bus.Counter{Name: "robots_deferred_total", Help: "Tasks put back because the host's robots.txt was unreachable.", Value: &s.Stats.RobotsDeferred},
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
	cons, err := bus.Consumer(ctx, s.o.JS, s.o.Names.StreamFetch(), s.o.Names.ConsumerFetcher())
	if err != nil {
		return err
	}
	s.life = ctx
	// The ack wait is 2 x --fetch-timeout + 5 s: under 15 s for a fetch
	// timeout under 5 s, when a fixed 15 s keep-alive would let the task
	// be redelivered to another fetcher while this one still fetches.
	s.keepAliveEvery = 15 * time.Second
	if info := cons.CachedInfo(); info != nil && info.Config.AckWait > 0 {
		s.keepAliveEvery = min(s.keepAliveEvery, info.Config.AckWait/3)
	}
	s.ipGate, err = ipgate.Open(ctx, s.o.JS, s.o.Names.IPBucket(), ipgate.Options{
		Ceiling: s.o.IPCeiling, Gap: s.o.IPGap, LeaseTTL: s.client.opts.Timeout + 30*time.Second, Now: s.o.Now,
	})
	if err != nil {
		return err
	}
	if !s.o.IgnoreRobots {
		if s.robots, err = openRobots(ctx, s.o.JS, s.o.Names, s.client, s.o.HTTP.UserAgent, s.o.RobotsTTL, s.o.RobotsRetry); err != nil {
			return err
		}
		s.robots.now = s.o.Now
		s.robotsView.Store(s.robots)
		s.robots.get = func(ctx context.Context, rawURL string) Response {
			r, wait, err := s.gatedFetch(ctx, rawURL, robotsIPWait)
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
	defer s.client.CloseIdleConnections()
	bus.Work(ctx, s.o.Workers, holdUntilDue(ctx, msgs), s.dlq.Recover(s.o.Log, s.handle))
	return nil
}

func (s *Service) handle(ctx context.Context, m jetstream.Msg) {
	var task messages.FetchTask
	err := messages.Decode(m.Data(), &task)
	if err == nil && task.URL == "" {
		err = fmt.Errorf("fetch task %q has no URL", task.ID)
	}
	if err == nil && s.dlq.CrashLooping(m) {
		err = fmt.Errorf("delivered more than %d times without being acked", s.o.MaxDeliver)
	}
	if err != nil {
		s.dlq.ParkOrLog(ctx, m, err.Error(), s.o.Log)
		return
	}
	ok, finished := s.claims.claim(task.ID)
	if !ok {
		if finished {
			_ = m.Ack() // done already; the first ack was lost or late
		}
		s.Stats.Redelivered.Add(1)
		return
	}
	acked := false
	defer func() { s.claims.finish(task.ID, acked) }()
	done := messages.FetchDone{V: messages.Version, TaskID: task.ID, Partition: task.Partition, Host: task.Host, URL: task.URL}
	var out []*nats.Msg
	var ids []string
	if !task.Deadline.IsZero() && time.Now().After(task.Deadline) {
		// Too late: the frontier may already have given the URL to someone
		// else. Say so, and let the frontier issue it again.
		done.Expired = true
		s.Stats.Expired.Add(1)
	} else {
		stop := make(chan struct{})
		go keepAlive(m, s.keepAliveEvery, stop)
		page, body, err := s.visit(ctx, task, &done)
		close(stop)
		if err != nil {
			s.o.Log.Warn("robots.txt bucket unavailable; task will be redelivered", "url", task.URL, "err", err)
			_ = m.NakWithDelay(5 * time.Second)
			return
		}
		if page != nil {
			out = append(out, pageMsg(s.o.Names, *page, body))
			ids = append(ids, "page:"+task.ID)
		}
	}
	done.FinishedAt = time.Now().UTC()
	data, _ := messages.Encode(&done)
	dm := nats.NewMsg(s.o.Names.FrontierDone(task.Partition))
	dm.Data = data
	dm.Header.Set(messages.HeaderKind, "done")
	out = append(out, dm)
	ids = append(ids, "done:"+task.ID)
	err = bus.PublishAll(ctx, s.o.JS, out, ids)
	if bus.TooLarge(err) && len(out) == 2 {
		// Permanent for this page (issue 19: such pages were refetched 10
		// times and dead-lettered, with no record): record it without its
		// body and the response's headers, and say why.
		s.o.Log.Warn("page message over the NATS limits; recorded without its body and headers", "url", task.URL, "err", err)
		var page messages.Page
		if p, derr := messages.DecodePage(out[0].Header.Get(messages.HeaderPage)); derr == nil {
			page = p
		} else {
			page = s.record(task, "")
		}
		page = bareRecord(page, fmt.Sprintf("page message over the NATS limits (%v): recorded without its body", err))
		page.Truncated = page.BodySize > 0
		out[0] = pageMsg(s.o.Names, page, nil)
		err = bus.PublishAll(ctx, s.o.JS, out, ids)
	}
	if bus.TooLarge(err) {
		// Not even a bare record fits (a server with a tiny max_payload):
		// the frontier still hears the task is done, with the reason.
		s.o.Log.Error("page record over the NATS limits; only the done report is published", "url", task.URL, "err", err)
		done.Error = errorText(fmt.Sprintf("page record over the NATS limits: %v", err))
		data, _ := messages.Encode(&done)
		out[len(out)-1].Data = data
		err = bus.PublishAll(ctx, s.o.JS, out[len(out)-1:], ids[len(ids)-1:])
	}
	if err != nil {
		// Let JetStream redeliver the task; the message IDs keep a retry from
		// publishing the page twice within the duplicate window.
		s.o.Log.Warn("publishing fetch result failed; task will be redelivered", "url", task.URL, "err", err)
		_ = m.NakWithDelay(5 * time.Second)
		return
	}
	_ = m.Ack()
	acked = true
}

// visit checks robots.txt and fetches the task's URL, filling done. It returns
// the page to publish: a fetched one, or a record of why it was not fetched;
// nil when the task is to be issued again later.
func (s *Service) visit(ctx context.Context, task messages.FetchTask, done *messages.FetchDone) (*messages.Page, []byte, error) {
	if s.robots != nil {
		v, err := s.robots.check(ctx, task.URL)
		if err != nil {
			return nil, nil, err
		}
		if v.Fetched {
			s.Stats.RobotsFetched.Add(1)
		}
		done.CrawlDelay, done.Duration = v.CrawlDelay, v.Duration
		switch {
		case v.RetryAfter > 0:
			// RFC 9309: an unreachable robots.txt means "disallow all"
			// for now; come back later rather than drop the URL.
			done.Retry, done.RetryAfter = true, v.RetryAfter
			done.Error = errorText(v.Reason)
			s.Stats.RobotsDeferred.Add(1)
			return nil, nil, nil
		case !v.Allowed:
			done.Disallowed = true
			p := s.record(task, v.Reason)
			switch {
			case v.Blocked:
				// The address guard refused the host (its robots.txt
				// first): final at once, the record says why.
				p.ErrorKind = KindBlocked
				s.failed(task.Host, KindBlocked, v.Reason)
			case v.GaveUp:
				p.ErrorKind = KindRobots
				s.failed(task.Host, KindRobots, v.Reason)
			default:
				s.Stats.Disallowed.Add(1)
			}
			done.ErrorKind = p.ErrorKind
			return &p, nil, nil
		case v.Fetched:
			// robots.txt took this turn: the page waits the host's gap
			// here, so politeness holds without a round trip through the
			// frontier. On shutdown, hand the URL back instead.
			rule := politeness.Rule{Delay: s.o.Delay, Factor: s.o.Factor, MaxCrawlDelay: s.o.MaxCrawlDelay, MaxGap: s.o.MaxGap}
			gap, _ := rule.Rest(v.CrawlDelay, v.Duration, 0)
			select {
			case <-time.After(gap):
			case <-s.life.Done():
				done.Retry, done.Error = true, "fetcher shutting down"
				return nil, nil, nil
			}
		}
	}
	resp, wait, err := s.gatedFetch(ctx, task.URL, ipMaxWait)
	if resp == nil {
		// The server's address stayed at its per-IP limit, or the lease
		// table is unreachable (fetching anyway could break the limit):
		// hand the URL back for later.
		done.Error = fmt.Sprintf("server address at its per-IP limit (--ip-max-concurrent %d) for %s", s.o.IPCeiling, ipMaxWait)
		if err != nil && ctx.Err() == nil {
			s.o.Log.Warn("per-IP lease table unavailable; task put back", "url", task.URL, "err", err)
			wait = 5 * time.Second
			done.Error = errorText("per-IP lease table unavailable: " + err.Error())
		}
		done.Retry, done.RetryAfter = true, wait
		s.Stats.IPDeferred.Add(1)
		return nil, nil, nil
	}
	page := s.page(task, *resp)
	done.Status, done.Error, done.Duration, done.IP = page.Status, page.Error, page.Duration, page.IP
	done.ErrorKind, done.NoSuchHost = page.ErrorKind, noSuchHost(resp.Err)
	return &page, resp.Body, nil
}

// gatedFetch fetches rawURL within its server's per-IP limit, waiting at
// most maxWait for a slot. Without a slot it returns nil and the wait left,
// or the lease table's error.
func (s *Service) gatedFetch(ctx context.Context, rawURL string, maxWait time.Duration) (*Response, time.Duration, error) {
	lease, wait, err := s.ipGate.Wait(ctx, s.addressOf(ctx, rawURL), maxWait)
	if err != nil || (lease == nil && wait > 0) {
		return nil, wait, err
	}
	resp := s.client.Fetch(ctx, rawURL)
	if lease != nil {
		// Off the critical path: the done message need not wait for it.
		go func() {
			if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
				s.o.Log.Warn("releasing per-IP lease failed; it will expire", "url", rawURL, "err", err)
			}
		}()
	}
	return &resp, 0, nil
}

// ipMaxWait is how long a worker waits for its server's per-IP slot before
// handing the URL back to the frontier (which keeps the host resting).
const ipMaxWait = 2 * time.Second

// robotsIPWait is the same for a robots.txt fetch, which holds up every URL
// of its host: it may wait longer.
const robotsIPWait = 30 * time.Second

// addressOf is the address the request for rawURL will most likely go to:
// the first the address guard lets through, which the dialer tries first.
// "" when unknown or refused (the gate then lets the request through, takes
// no lease on an address never connected to, and the fetch reports the
// resolution error or the refusal). The lookup is bounded as the fetch's
// own is: a name whose servers do not answer must not cost more here than
// the fetch would spend on it.
func (s *Service) addressOf(ctx context.Context, rawURL string) string {
	if s.ipGate == nil {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	addrs, err := s.client.fetchable(ctx, u.Hostname())
	if err != nil || len(addrs) == 0 {
		return ""
	}
	return addrs[0].String()
}

// record is the page message of a URL that was not fetched, and why.
func (s *Service) record(task messages.FetchTask, why string) messages.Page {
	return messages.Page{
		V: messages.Version, TaskID: task.ID, URL: task.URL, Host: task.Host, Partition: task.Partition,
		Depth: task.Depth, Hops: task.Hops, Error: errorText(why), FetchedAt: time.Now().UTC(),
	}
}

// keepAlive tells JetStream the task is being worked on while a slow fetch
// runs, so it is not redelivered to another worker meanwhile.
func keepAlive(m jetstream.Msg, every time.Duration, stop <-chan struct{}) {
	if every <= 0 {
		every = 15 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = m.InProgress()
		}
	}
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

func (s *Service) page(task messages.FetchTask, r Response) messages.Page {
	p := messages.Page{
		V: messages.Version, TaskID: task.ID, URL: task.URL, Host: task.Host, Partition: task.Partition,
		Depth: task.Depth, Hops: task.Hops, Status: r.Status, ContentType: r.ContentType, Headers: r.Headers,
		Location: r.Location, FetchedAt: time.Now().UTC(), Duration: r.Duration, IP: r.IP,
		BodySize: len(r.Body), Truncated: r.Truncated, Skipped: r.Skipped, Encoding: r.Encoding,
	}
	if r.Err != nil {
		p.Error, p.ErrorKind = errorText(r.Err.Error()), r.ErrKind
		s.failed(task.Host, r.ErrKind, p.Error)
	} else {
		s.Stats.Fetched.Add(1)
		if s.statuses != nil {
			class := fmt.Sprintf("%dxx", r.Status/100)
			s.statuses.WithLabelValues(class).Inc()
			s.perHost.add(task.Host, class, "")
		}
	}
	s.Stats.Bytes.Add(int64(len(r.Body)))
	return p
}

// maxPageHeader bounds a page message's headers (the Trawler-Page JSON, the
// URL and Content-Type repeated): well within headerRoom and JetStream's
// bus.MaxHeaderBytes, whatever the response sent. The fetcher's own bounds
// (URL and Location within --max-url-length, header values and the error
// within 1 KiB) keep a page under it but for JSON escaping of hostile
// bytes; past it the metadata goes without the response's headers.
const maxPageHeader = 48 << 10

// pageMsg builds the message a tap reads: the raw body as data, the metadata as
// JSON in a header, and a few plain headers for quick filtering. Metadata
// over maxPageHeader is recorded without the response's headers, content
// type and redirect target, with the reason in Error.
func pageMsg(names subjects.Names, p messages.Page, body []byte) *nats.Msg {
	meta := pageMeta(p)
	if n := len(meta) + len(p.URL) + len(p.ContentType); n > maxPageHeader {
		p = bareRecord(p, fmt.Sprintf("page metadata of %d bytes over the %d-byte header bound: response headers left out", n, maxPageHeader))
		meta = pageMeta(p)
	}
	m := nats.NewMsg(names.PagesFetched())
	m.Data = body
	m.Header.Set(messages.HeaderSchema, messages.Schema("page"))
	m.Header.Set(messages.HeaderPage, string(meta))
	m.Header.Set("Trawler-URL", p.URL)
	m.Header.Set("Trawler-Status", strconv.Itoa(p.Status))
	if p.ContentType != "" {
		m.Header.Set("Content-Type", p.ContentType)
	}
	return m
}

// pageMeta is p as the Trawler-Page header carries it: JSON without HTML
// escaping (the same JSON to a reader), so that a URL's "&" takes one byte
// of the header, not six.
func pageMeta(p messages.Page) []byte {
	data, _ := messages.EncodePage(&p)
	return data
}

// bareRecord is p without what a response may make large (its headers,
// content type and redirect target), with why added to its error: a record
// of the fetch that always fits a message.
func bareRecord(p messages.Page, why string) messages.Page {
	p.Headers, p.ContentType, p.Location = nil, "", ""
	if p.Error != "" {
		why = p.Error + "; " + why
	}
	p.Error = why
	if p.ErrorKind == "" {
		p.ErrorKind = KindProtocol
	}
	return p
}
