// Package frontier schedules fetches: per-host queues in the partition's
// store, ordered by priority (breadth-first: the shallowest URL first;
// best-first: the highest score), at most one task in flight per host, and a
// politeness gap between two requests to a host. Each owned partition runs
// one loop that alone touches its state (partition.go), so nothing here
// needs a lock.
//
// Intake (new URLs from dedup, finished tasks from fetchers) arrives on one
// consumer per partition. A batch is applied in memory, then to the store in
// one step (store.Step) that also writes its stream sequences to the
// partition's intake log and pops the hosts it made due, so a finished fetch
// and the host's next task cost one commit; then it is acked (intake.go).
// The step runs beside the loop, which goes on meanwhile; a host's next task
// is often published from a reservation before the step that records it
// (issue.go), and the step's commit is hurried only when a host waits for it
// (pacing.go). A redelivered message found in the log was applied before
// (its ack was lost) and is skipped. A plain "highest sequence applied"
// watermark would not do: JetStream redelivers an unacked message after its
// ack wait, possibly after newer ones were applied. On a store whose step is
// not atomic (Redis), a crash between its parts replays one batch (its URLs
// queued twice, never lost). Failed store writes are retried in place,
// holding the messages. Leases, deferrals and given-up URLs: leases.go; the
// rest a host earns: politeness.go; loading a partition: load.go.
package frontier

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/ownership"
	"github.com/trawlerhq/trawler/pkg/revisit"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

const maxBatch = 1024

// maxIssue bounds the hosts issued in one step: a partition with thousands
// of due hosts (a restart) issues them over several steps, so memory and the
// store's script arguments stay small and intake is not starved meanwhile.
const maxIssue = 512

// loadsAtOnce bounds the partitions loading their state at the same time:
// a load holds the whole host list of a partition in memory.
const loadsAtOnce = 2

// Options wire a frontier service.
type Options struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	Store      store.Frontier
	Partitions []int
	// Join, when set, takes partitions from the ownership table instead of
	// the static Partitions (cluster mode with several replicas).
	Join ownership.Joiner

	Delay time.Duration // minimum politeness gap between requests to one host
	// Factor times a response's duration is also a lower bound of the gap
	// (Mercator used 10): slow servers get proportionally more rest.
	Factor float64
	// MaxCrawlDelay caps a robots.txt Crawl-delay (a hostile value would
	// stall the host forever).
	MaxCrawlDelay time.Duration
	// MaxGap caps what a host's Crawl-delay, response time and failures
	// add to its rest (0: politeness.DefaultMaxGap); see pkg/politeness.
	MaxGap       time.Duration
	FetchTimeout time.Duration
	// IssueAhead is how long before a host's politeness gap ends its next
	// task may be issued, carrying the gap's end as NotBefore: the trip
	// through NATS to a fetcher then overlaps the gap instead of adding to
	// it. 0 issues when the gap is over. Experimental: see docs/frontier.md.
	IssueAhead time.Duration
	// TaskTTL is how long an issued task may wait for a fetcher; after it the
	// fetcher reports it expired and the URL is issued again.
	TaskTTL time.Duration
	// LeaseMargin is added to TaskTTL + FetchTimeout to make a task's lease:
	// the frontier's allowance for clock skew and slow publishing.
	LeaseMargin time.Duration
	MaxAttempts int
	// MaxDeferrals bounds the hand-backs of a URL that was not fetched
	// (robots.txt unreachable, its server's per-IP slot busy, a task that
	// expired before a fetcher got to it): a URL is issued at most
	// MaxAttempts + MaxDeferrals times in all, then it ends as failed with
	// a page record of kind "deferred". 0: DefaultMaxDeferrals.
	MaxDeferrals int
	MaxPages     int // crawl-wide fetch budget, 0 = unlimited
	MaxDeliver   int
	// Limits are the per-host budget and queue cap, enforced by the store.
	Limits store.Limits
	// Revisit, when set, makes the crawl continuous: every fetched URL is
	// scheduled again after an adaptive interval (revisit.go).
	Revisit *revisit.Schedule
	// Inbox, when set, carries tasks to the fetcher of this process instead
	// of the fetch stream while it has room (`trawler run` without
	// --nats-listen). A task handed and not yet acked counts as sent when a
	// partition reloads; after a crash nothing of it is left, and the load
	// publishes the tasks in flight that no stream holds.
	Inbox *bus.Inbox
	// AfterStep, when set, is called after each outcome of a partition's
	// step is handled: `trawler run`'s end watcher then asks the store
	// whether anything is left (crawlstate.Watcher.Wake). It must not block.
	AfterStep func()

	Log        *slog.Logger
	Registerer prometheus.Registerer // may be nil
}

// Stats are the service's running totals.
type Stats struct {
	Enqueued, Issued, Done, Expired, Dropped atomic.Int64
	// CrawlDelayCapped counts fetches whose host asked, by robots.txt, for
	// a Crawl-delay above --max-crawl-delay or --politeness-max-gap.
	CrawlDelayCapped atomic.Int64
	// Yielded counts rests lengthened by longest queue first: a host with
	// fewer URLs queued than its partition's longest while tasks queued
	// (yield.go).
	Yielded atomic.Int64
	// Deferred counts tasks handed back unfetched; DeferredOut the URLs
	// that were handed back too often (MaxDeferrals) and ended as failed.
	Deferred, DeferredOut atomic.Int64
	// Reserved counts tasks published from a host's reservation, before
	// the write that records them (part of Issued).
	Reserved atomic.Int64
	// SentThen counts those published from the entry after a reservation,
	// when the task before them ended ahead of the step recording it.
	SentThen atomic.Int64
	// Handed counts tasks given to the fetcher in process (Options.Inbox)
	// rather than published (part of Issued).
	Handed atomic.Int64
	// EndedEarly counts fetches whose host got its next task when the
	// fetcher said the response was read (Ended), before the done report.
	EndedEarly atomic.Int64
	// Revisits counts URLs moved from the revisit schedule to their host
	// queues (part of Enqueued).
	Revisits atomic.Int64
}

// DefaultMaxDeferrals is MaxDeferrals when it is left 0.
const DefaultMaxDeferrals = 50

// Gauges are the replica's current queue figures, summed over its
// partitions and refreshed about once a second.
type Gauges struct {
	Queued   atomic.Int64 // URLs waiting in host queues
	Ready    atomic.Int64 // hosts with URLs whose politeness gap is over
	Waiting  atomic.Int64 // hosts with URLs resting out their gap
	InFlight atomic.Int64 // hosts with a task in flight
}

// Service is one frontier replica.
type Service struct {
	o       Options
	loading chan struct{} // semaphore of partition loads
	dlq     bus.DeadLetters
	gapHist prometheus.Histogram // nil without a registerer
	Stats   Stats
	Gauges  Gauges

	// early: the store hands a write's tasks over before it is durable
	// (store.Early) and derives task IDs from queue entries; see
	// docs/frontier.md, "Issuing before the commit".
	early bool
	// ends: each running partition's channel of fetch ends (Ended).
	ends sync.Map
}

// New wires a frontier replica; Run starts it.
func New(o Options) *Service {
	if o.TaskTTL <= 0 {
		o.TaskTTL = 10 * time.Minute
	}
	if o.LeaseMargin <= 0 {
		o.LeaseMargin = time.Minute
	}
	if o.MaxDeferrals <= 0 {
		o.MaxDeferrals = DefaultMaxDeferrals
	}
	s := &Service{o: o, dlq: bus.DeadLetters{JS: o.JS, Names: o.Names, Service: "frontier", MaxDeliver: o.MaxDeliver},
		loading: make(chan struct{}, loadsAtOnce)}
	if o.Store != nil {
		o.Store.SetLimits(o.Limits)
	}
	_, s.early = o.Store.(store.Early)
	if o.Registerer != nil {
		s.gapHist = prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "trawler", Subsystem: "frontier", Name: "host_gap_seconds",
			Help:    "Politeness gap given to a host after each fetch: max(delay, min(max(Crawl-delay, k x response time) + failure backoff, max gap)).",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60},
		})
		gauge := func(name, help string, v *atomic.Int64) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "trawler", Subsystem: "frontier", Name: name, Help: help},
				func() float64 { return float64(v.Load()) })
		}
		o.Registerer.MustRegister(s.gapHist,
			gauge("queued_urls", "URLs waiting in the host queues of this replica's partitions.", &s.Gauges.Queued),
			gauge("ready_hosts", "Hosts with queued URLs whose politeness gap is over.", &s.Gauges.Ready),
			gauge("waiting_hosts", "Hosts with queued URLs resting out their politeness gap.", &s.Gauges.Waiting),
			gauge("inflight_hosts", "Hosts with a fetch task in flight: tasks issued and not yet reported done or expired, one per host (status's \"in flight\"). Kept exact, not sampled.", &s.Gauges.InFlight),
		)
		bus.RegisterCounters(o.Registerer, "frontier",
			bus.Counter{Name: "urls_enqueued_total", Help: "URLs added to host queues.", Value: &s.Stats.Enqueued},
			bus.Counter{Name: "tasks_issued_total", Help: "Fetch tasks issued.", Value: &s.Stats.Issued},
			bus.Counter{Name: "tasks_reserved_total", Help: "Fetch tasks published from a host's reserved next URL, before the store write that records them (part of tasks_issued_total).", Value: &s.Stats.Reserved},
			bus.Counter{Name: "tasks_sent_then_total", Help: "Fetch tasks published from the entry after a host's reservation, the task before them having ended ahead of the store write that records it (part of tasks_reserved_total).", Value: &s.Stats.SentThen},
			bus.Counter{Name: "tasks_handed_total", Help: "Fetch tasks given to the fetcher of this process without the fetch stream (trawler run without --nats-listen; part of tasks_issued_total).", Value: &s.Stats.Handed},
			bus.Counter{Name: "fetches_ended_early_total", Help: "Fetches whose host got its next task when a fetcher had read the response, before the done report (in process in trawler run, on core NATS from the services' fetchers).", Value: &s.Stats.EndedEarly},
			bus.Counter{Name: "revisits_queued_total", Help: "URLs moved from the revisit schedule into their host queues, due again (a continuous crawl; part of urls_enqueued_total).", Value: &s.Stats.Revisits},
			bus.Counter{Name: "tasks_done_total", Help: "Fetch tasks reported done.", Value: &s.Stats.Done},
			bus.Counter{Name: "tasks_expired_total", Help: "Tasks whose lease ran out or that expired unfetched.", Value: &s.Stats.Expired},
			bus.Counter{Name: "urls_dropped_total", Help: "URLs given up after --max-attempts lost tasks, ended with a page record of kind lost.", Value: &s.Stats.Dropped},
			bus.Counter{Name: "tasks_deferred_total", Help: "Tasks handed back unfetched (robots.txt unreachable, per-IP slot busy, expired before a fetcher got them).", Value: &s.Stats.Deferred},
			bus.Counter{Name: "urls_deferred_out_total", Help: "URLs handed back unfetched more than --max-deferrals times, ended as failed (kind deferred).", Value: &s.Stats.DeferredOut},
			bus.Counter{Name: "crawl_delay_capped_total", Help: "Fetches whose host's robots.txt Crawl-delay was above --max-crawl-delay or --politeness-max-gap (the cap applied).", Value: &s.Stats.CrawlDelayCapped},
			bus.Counter{Name: "rests_lengthened_total", Help: "Host rests lengthened by longest queue first: the host had fewer URLs queued than its partition's longest while tasks queued beyond their fetch (see docs/frontier.md).", Value: &s.Stats.Yielded},
		)
	}
	return s
}

// Run schedules every owned partition until ctx ends: the static
// Partitions, or those the ownership table assigns when Join is set.
func (s *Service) Run(ctx context.Context) error {
	defer bus.KeepBlock(ctx, s.o.JS, s.o.Names.StreamFrontier(), s.o.Names.Keeper(s.o.Names.StreamFrontier()), s.o.Log)()
	return ownership.Serve(ctx, s.o.Partitions, s.o.Join, s.runPartition, func(p int, err error, retryIn time.Duration) {
		s.o.Log.Warn("partition failed; restarting it", "partition", p, "err", err, "retry_in", retryIn)
	})
}

// runPartition schedules partition p until ctx ends.
func (s *Service) runPartition(ctx context.Context, p int) error {
	cons, err := bus.Consumer(ctx, s.o.JS, s.o.Names.StreamFrontier(), s.o.Names.ConsumerFrontier(p), s.o.Log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("frontier partition %d: %w", p, err)
	}
	pt := &partition{s: s, p: p, log: s.o.Log.With("partition", p), hosts: map[string]*host{}, cons: cons}
	defer pt.forget()
	if err := pt.run(ctx, cons); err != nil && ctx.Err() == nil {
		return fmt.Errorf("frontier partition %d: %w", p, err)
	}
	return nil
}
