// Package frontier schedules fetches: per-host FIFO queues in the partition's
// store, at most one task in flight per host, and a politeness gap between two
// requests to a host. Each owned partition runs one loop that alone touches its
// state, so nothing here needs a lock.
//
// Intake (new URLs from dedup, finished tasks from fetchers) arrives on one
// consumer per partition. A batch is applied in memory, then to the store in
// one step (store.Step) that also writes its stream sequences to the
// partition's intake log and pops the hosts it made due, so a finished fetch
// and the host's next task cost one commit; then it is acked. A redelivered
// message found in the log was applied before (its ack was lost) and is
// skipped. A plain "highest sequence applied" watermark would not do:
// JetStream redelivers an unacked message after its ack wait, possibly after
// newer ones were applied. On a store whose step is not atomic (Redis), a
// crash between its parts replays one batch (its URLs queued twice, never
// lost). Failed store writes are retried in place, holding the messages.
package frontier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/ownership"
	"github.com/trawlerhq/trawler/pkg/politeness"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/urlx"
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

	Log        *slog.Logger
	Registerer prometheus.Registerer // may be nil
}

// Stats are the service's running totals.
type Stats struct {
	Enqueued, Issued, Done, Expired, Dropped atomic.Int64
	// CrawlDelayCapped counts fetches whose host asked, by robots.txt, for
	// a Crawl-delay above --max-crawl-delay or --politeness-max-gap.
	CrawlDelayCapped atomic.Int64
	// Deferred counts tasks handed back unfetched; DeferredOut the URLs
	// that were handed back too often (MaxDeferrals) and ended as failed.
	Deferred, DeferredOut atomic.Int64
	// Reserved counts tasks published from a host's reservation, before
	// the write that records them (part of Issued).
	Reserved atomic.Int64
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
			bus.Counter{Name: "tasks_done_total", Help: "Fetch tasks reported done.", Value: &s.Stats.Done},
			bus.Counter{Name: "tasks_expired_total", Help: "Tasks whose lease ran out or that expired unfetched.", Value: &s.Stats.Expired},
			bus.Counter{Name: "urls_dropped_total", Help: "URLs given up after --max-attempts lost tasks, ended with a page record of kind lost.", Value: &s.Stats.Dropped},
			bus.Counter{Name: "tasks_deferred_total", Help: "Tasks handed back unfetched (robots.txt unreachable, per-IP slot busy, expired before a fetcher got them).", Value: &s.Stats.Deferred},
			bus.Counter{Name: "urls_deferred_out_total", Help: "URLs handed back unfetched more than --max-deferrals times, ended as failed (kind deferred).", Value: &s.Stats.DeferredOut},
			bus.Counter{Name: "crawl_delay_capped_total", Help: "Fetches whose host's robots.txt Crawl-delay was above --max-crawl-delay or --politeness-max-gap (the cap applied).", Value: &s.Stats.CrawlDelayCapped},
		)
	}
	return s
}

// Run schedules every owned partition until ctx ends: the static
// Partitions, or those the ownership table assigns when Join is set.
func (s *Service) Run(ctx context.Context) error {
	return ownership.Serve(ctx, s.o.Partitions, s.o.Join, s.runPartition, func(p int, err error, retryIn time.Duration) {
		s.o.Log.Warn("partition failed; restarting it", "partition", p, "err", err, "retry_in", retryIn)
	})
}

// runPartition schedules partition p until ctx ends.
func (s *Service) runPartition(ctx context.Context, p int) error {
	cons, err := bus.Consumer(ctx, s.o.JS, s.o.Names.StreamFrontier(), s.o.Names.ConsumerFrontier(p))
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

// host is the in-memory view of one host of the partition.
type host struct {
	name      string
	queued    int
	inFlight  *store.InFlight
	nextAt    time.Time // politeness: earliest time of the next request
	scheduled bool      // an entry for it is in the ready heap
	failures  int       // consecutive fetches without an answer or with a 5xx
	// next is the host's reserved next task (store.Next), read by the
	// pop of its task in flight, in a write already durable: published as
	// soon as the host is due again, before the write that records it.
	// Dropped when a URL ranked above it arrives or the task in flight
	// goes back to the queue; memory only (none after a restart).
	next *store.Next
	// unrecorded: the task in flight was published from the reservation
	// while a step was pending, and the write that records it has not
	// committed yet; its done report waits (partition.held) until it has.
	unrecorded bool
	// rest is the politeness gap its last done report gave it (zero before
	// one): a host that rests less than the group commit's pacing needs
	// the step recording its task committed at once (urgent).
	rest time.Duration
}

type partition struct {
	s       *Service
	p       int
	log     *slog.Logger
	cons    jetstream.Consumer
	batches int // applied so far, to trim the intake log now and then
	// applied counts intake batches applied to the store (Store.Apply wants
	// an increasing number); which messages were applied is the intake log
	// (Store.Applied / MarkApplied).
	applied   uint64
	hosts     map[string]*host
	ready     timeHeap // hosts waiting for their politeness gap
	leases    timeHeap // tasks in flight, by lease end
	budgetOut bool
	// published are the task IDs found in the fetch stream or in done
	// reports when the partition loaded (early stores only): a replayed
	// step that pops one of them again is not published again.
	published map[string]bool

	gaugedAt time.Time
	gauged   [4]int64 // queued, ready, waiting, in flight as last added to Gauges

	// While a step is pending (early stores only), intake waits for the
	// next step in carry (as it came) and pre (done reports that already
	// published their host's reserved task), or in held (done reports of
	// tasks whose recording step has not committed). See take.
	carry []jetstream.Msg
	pre   []preDone
	held  []heldDone
	// arrived: when the done reports in carry and held came, by stream
	// sequence; their host's rest counts from then, not from their step.
	arrived map[uint64]time.Time
	// later: hosts that came due while a step was pending without a
	// reservation; their pop needs a write, so they wait for the step.
	later []string
}

// preDone is a done report taken while a step was pending: its host was
// freed in memory and its reserved task published; the next step applies
// the done and records the task (issue). Without msg it is a host that came
// due on the timer (takeDue): only the issue.
type preDone struct {
	msg   jetstream.Msg
	seq   uint64
	done  store.Done
	issue store.Issue
}

// heldDone is a done report of a task not yet recorded by a committed step.
type heldDone struct {
	msg          jetstream.Msg
	host, taskID string
}

// pending is a step running on its own goroutine; its early hand-over
// and its outcome come back to the loop on ev, in that order.
type pending struct {
	ev          chan stepEvent
	req         store.StepRequest
	due         []string
	keep, redel []jetstream.Msg
	again       []messages.FetchDone
	now         time.Time
	sent        bool
}

type stepEvent struct {
	early bool
	res   store.StepResult
	err   error
}

func (pt *partition) run(ctx context.Context, cons jetstream.Consumer) error {
	work := context.WithoutCancel(ctx) // finish the step in hand on shutdown
	select {
	case pt.s.loading <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	err := pt.load(work)
	<-pt.s.loading
	if err != nil {
		return err
	}
	msgs, err := bus.PullBatches(ctx, cons, maxBatch)
	if err != nil {
		return err
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var pend *pending // the step in progress, if any: one at a time
	// finish waits for the pending step's outcome and completes it.
	finish := func() error {
		for pend != nil {
			if err := pt.event(work, &pend, <-pend.ev); err != nil {
				return err
			}
		}
		return nil
	}
	stop := func() error {
		// Finish the step in hand and what waits for the next one, so
		// a clean stop leaves no task published unrecorded.
		for pend != nil || len(pt.pre) > 0 {
			if err := finish(); err != nil {
				return err
			}
			if len(pt.pre) > 0 || len(pt.carry) > 0 {
				batch, pre := pt.carry, pt.pre
				pt.carry, pt.pre = nil, nil
				var err error
				if pend, err = pt.apply(work, batch, pre); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for {
		now := time.Now()
		if pend == nil {
			if err := pt.expireLeases(work, now); err != nil {
				return err
			}
			// Due hosts with a reservation go out now and are recorded
			// by a step that waits for company; the others are popped
			// by an urgent write, as before.
			pt.takeDue(work, now)
			pt.reschedule(now)
			var err error
			if len(pt.carry) > 0 || len(pt.pre) > 0 {
				batch, pre := pt.carry, pt.pre
				pt.carry, pt.pre = nil, nil
				pend, err = pt.apply(work, batch, pre)
			} else {
				err = pt.issueDue(work, now)
			}
			if err != nil {
				return err
			}
			if pend != nil && !pt.s.early {
				if err := finish(); err != nil {
					return err
				}
				continue
			}
		}
		if pend != nil {
			pt.takeDue(work, now)
		}
		pt.gauge(now)
		wake := pt.nextWake(now)
		in, ev := msgs, (<-chan stepEvent)(nil)
		if pend != nil {
			// The step's outcome wakes the loop too; leases wait for it.
			wake = pt.nextDue(now)
			ev = pend.ev
			if len(pt.carry)+len(pt.pre)+len(pt.held) >= maxBatch {
				in = nil // enough for the next step
			}
		}
		timer.Reset(wake)
		select {
		case <-ctx.Done():
			return stop()
		case m, ok := <-in:
			if !ok {
				return stop()
			}
			batch := bus.Drain(in, []jetstream.Msg{m}, maxBatch)
			if pend == nil {
				p, err := pt.apply(work, batch, nil)
				if err != nil {
					return err
				}
				pend = p
				if pend != nil && !pt.s.early {
					if err := finish(); err != nil {
						return err
					}
				}
				continue
			}
			pt.take(work, batch, time.Now())
		case e := <-ev:
			if err := pt.event(work, &pend, e); err != nil {
				return err
			}
		case <-timer.C:
		}
	}
}

// event handles one event of the pending step: its early hand-over
// (publish the tasks) or its outcome (complete it; *pend becomes nil).
func (pt *partition) event(ctx context.Context, pend **pending, e stepEvent) error {
	p := *pend
	if e.early {
		if pt.publishEarly(ctx, e.res.Tasks) {
			p.sent = true
		}
		return nil
	}
	*pend = nil
	if e.err != nil {
		return e.err
	}
	return pt.stepped(ctx, p, e.res)
}

// load rebuilds memory from the store: queued hosts become due now, tasks in
// flight keep their leases. A task recorded in flight but never published
// (a crash between the two) is published again; see unpublished.
func (pt *partition) load(ctx context.Context) error {
	var st store.PartitionState
	if err := bus.Retry(ctx, "load partition", pt.log.Warn, nil, func() (err error) {
		st, err = pt.s.o.Store.Load(ctx, pt.p)
		return err
	}); err != nil {
		return err
	}
	pt.applied = st.Applied
	now := time.Now()
	var inFlight []store.InFlight
	for _, hs := range st.Hosts {
		h := pt.host(hs.Host)
		h.queued = hs.Queued
		pt.setTask(h, hs.InFlight)
		h.nextAt = hs.NotBefore // politeness holds across the restart
		if h.inFlight != nil {
			pt.leases.push(h.inFlight.LeaseUntil, h.name, h.inFlight.Task.ID)
			inFlight = append(inFlight, *h.inFlight)
		}
		pt.schedule(h, now)
	}
	if len(inFlight) == 0 && !pt.s.early {
		return nil
	}
	var lost []store.InFlight
	if err := bus.Retry(ctx, "find unpublished tasks", pt.log.Warn, nil, func() (err error) {
		lost, err = pt.unpublished(ctx, inFlight)
		return err
	}); err != nil {
		return err
	}
	if len(lost) > 0 {
		pt.log.Info("publishing tasks recorded but not published before the last stop", "tasks", len(lost))
		return pt.publish(ctx, lost)
	}
	return nil
}

// unpublished returns the tasks that are neither waiting in the fetch stream
// nor reported in a done message. A fetcher publishes a task's done message
// before it acks (and so removes) the task, so reading the fetch stream first
// and the done messages second cannot miss a task that moves between them.
// Both reads are bounded by the tasks in flight: one per host.
func (pt *partition) unpublished(ctx context.Context, tasks []store.InFlight) ([]store.InFlight, error) {
	seen := map[string]bool{}
	scan := func(stream, subject string, id func([]byte) string) error {
		st, err := pt.s.o.JS.Stream(ctx, stream)
		if err != nil {
			return err
		}
		for seq := uint64(1); ; seq++ {
			m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			seen[id(m.Data)] = true
			seq = m.Sequence
		}
	}
	taskID := func(data []byte) string {
		var t messages.FetchTask
		_ = messages.Decode(data, &t)
		return t.ID
	}
	doneID := func(data []byte) string {
		var d messages.FetchDone
		_ = messages.Decode(data, &d)
		return d.TaskID
	}
	if err := scan(pt.s.o.Names.StreamFetch(), pt.s.o.Names.Fetch(pt.p), taskID); err != nil {
		return nil, err
	}
	if err := scan(pt.s.o.Names.StreamFrontier(), pt.s.o.Names.FrontierDone(pt.p), doneID); err != nil {
		return nil, err
	}
	var lost []store.InFlight
	for _, t := range tasks {
		if !seen[t.Task.ID] {
			lost = append(lost, t)
		}
	}
	if pt.s.early {
		pt.published = seen
	}
	return lost, nil
}

func (pt *partition) host(name string) *host {
	h := pt.hosts[name]
	if h == nil {
		h = &host{name: name}
		pt.hosts[name] = h
	}
	return h
}

// schedule puts h in the ready heap if it can take a task. A host with
// nothing queued is kept until its politeness gap has passed (a link to it
// may arrive any moment, from the very page just fetched) and forgotten
// then, so memory follows the live hosts only.
func (pt *partition) schedule(h *host, now time.Time) {
	if h.inFlight != nil {
		return
	}
	if h.queued <= 0 && !h.nextAt.After(now) {
		delete(pt.hosts, h.name)
		return
	}
	if !h.scheduled {
		h.scheduled = true
		pt.ready.push(maxTime(h.nextAt, now), h.name, "")
	}
}

// nextDue is how long until the ready heap's first host is due (at most a
// second): the wake while a step is pending (takeDue).
func (pt *partition) nextDue(now time.Time) time.Duration {
	next := now.Add(time.Second)
	if pt.s.o.MaxPages <= 0 && !pt.budgetOut && pt.ready.Len() > 0 && pt.ready.peek().at.Add(-pt.s.o.IssueAhead).Before(next) {
		next = pt.ready.peek().at.Add(-pt.s.o.IssueAhead)
	}
	return max(next.Sub(now), time.Millisecond)
}

func (pt *partition) nextWake(now time.Time) time.Duration {
	next := now.Add(time.Second) // also re-check periodically
	if !pt.budgetOut && pt.ready.Len() > 0 && pt.ready.peek().at.Add(-pt.s.o.IssueAhead).Before(next) {
		next = pt.ready.peek().at.Add(-pt.s.o.IssueAhead)
	}
	if pt.leases.Len() > 0 && pt.leases.peek().at.Before(next) {
		next = pt.leases.peek().at
	}
	return max(next.Sub(now), time.Millisecond)
}

// apply records one intake batch, with the done reports taken while the
// previous step was pending (pre), in memory, then starts the step that
// records them in the store; stepped acks them once it is durable. It
// returns nil when there is nothing to write.
func (pt *partition) apply(ctx context.Context, batch []jetstream.Msg, pre []preDone) (*pending, error) {
	var (
		enq   []store.Queued
		done  []messages.FetchDone
		again []messages.FetchDone // to be issued again
		keep  []jetstream.Msg
		seqs  []uint64
	)
	hold := func() {
		for _, m := range batch {
			_ = m.InProgress()
		}
		for _, d := range pre {
			if d.msg != nil {
				_ = d.msg.InProgress()
			}
		}
	}
	all := make([]uint64, len(batch))
	for i, m := range batch {
		if md, err := m.Metadata(); err == nil {
			all[i] = md.Sequence.Stream
		}
	}
	var replayed []bool
	if err := bus.Retry(ctx, "read intake log", pt.log.Warn, hold, func() (err error) {
		replayed, err = pt.s.o.Store.Applied(ctx, pt.p, all)
		return err
	}); err != nil {
		return nil, err
	}
	// A message whose ack wait ran out while it sat in the pull buffer is
	// redelivered and may arrive twice in one batch: the store has applied
	// neither copy, so each would enqueue its URLs (a double fetch, seen
	// under load by the hostile-web test). The second copy is acked with
	// the batch, once the first is applied.
	inBatch := make(map[uint64]bool, len(batch)+len(pre))
	for _, d := range pre {
		if d.msg != nil {
			inBatch[d.seq] = true
		}
	}
	var redelivered []jetstream.Msg
	var doneAt []time.Time // when each of done arrived (zero: now)
	for i, m := range batch {
		if all[i] == 0 {
			pt.park(ctx, m, "message without JetStream metadata")
			continue
		}
		if replayed[i] {
			_ = m.Ack() // applied before; its ack was lost
			continue
		}
		if inBatch[all[i]] {
			redelivered = append(redelivered, m)
			continue
		}
		inBatch[all[i]] = true
		nd := len(done)
		if err := pt.decode(m, &enq, &done, &again); err != nil {
			pt.park(ctx, m, err.Error())
			continue
		}
		if len(done) > nd {
			doneAt = append(doneAt, pt.arrived[all[i]])
		}
		seqs = append(seqs, all[i])
		keep = append(keep, m)
	}
	for _, seq := range all {
		delete(pt.arrived, seq)
	}
	for _, d := range pre {
		delete(pt.arrived, d.seq)
	}
	if len(keep) == 0 && len(pre) == 0 {
		for _, m := range redelivered {
			_ = m.Ack()
		}
		return nil, nil
	}
	now := time.Now()
	freed := make([]store.Done, len(done))
	for i, fd := range done {
		// The rest counts from the report's arrival (restUntil), also
		// for one that waited for a pending step.
		at := now
		if !doneAt[i].IsZero() {
			at = doneAt[i]
		}
		freed[i] = store.Done{Host: fd.Host, TaskID: fd.TaskID, NotBefore: pt.restUntil(fd, at)}
		if h := pt.hosts[fd.Host]; h != nil && !nothingSent(fd) {
			h.rest = freed[i].NotBefore.Sub(at)
		}
	}
	// Memory first, so the hosts this batch frees can be popped in the
	// same write: a finished fetch and the host's next task cost one
	// commit. If the write fails the partition restarts and reloads; if
	// the store was ahead, it reloads here.
	pt.remember(enq, done, freed, now)
	due, err := pt.due(ctx, now)
	if err != nil {
		return nil, err
	}
	floor := uint64(0)
	if pt.batches++; pt.batches%256 == 0 {
		if ci, err := pt.cons.Info(ctx); err == nil {
			floor = ci.AckFloor.Stream
		}
	}
	issues := pt.issues(due, now)
	pt.publishReserved(ctx, issues)
	// The done reports taken while the previous step was pending: applied
	// in memory then, their reserved tasks published already.
	// and the reserved tasks of hosts that came due meanwhile (takeDue).
	for _, d := range pre {
		if d.msg != nil {
			seqs = append(seqs, d.seq)
			keep = append(keep, d.msg)
			freed = append(freed, d.done)
		}
		issues = append(issues, d.issue)
		due = append(due, d.issue.Host)
	}
	// The step is urgent if a task of it has not gone out yet (its early
	// hand-over publishes it), or if a host it issues for rests less than
	// the group commit's pacing: that task's done report will soon wait
	// for this commit. Otherwise the step waits for company (one commit
	// per interval under load, not one per page).
	hurry := false
	for _, r := range issues {
		if r.Next == nil || !pt.published[r.Next.TaskID] || pt.restsBriefly(r.Host) {
			hurry = true
		}
	}
	p := &pending{ev: make(chan stepEvent, 4), due: due, keep: keep, redel: redelivered, again: again, now: now,
		req: store.StepRequest{Seq: pt.applied + 1, Enqueue: enq, Done: freed, Applied: seqs, Floor: floor, Issue: issues, Hurry: hurry}}
	st, part, log := pt.s.o.Store, pt.p, pt.log
	go func() {
		var res store.StepResult
		err := bus.Retry(ctx, "apply intake", log.Warn, hold, func() (err error) {
			res, err = store.StepEarly(ctx, st, part, p.req, func(r store.StepResult) { p.ev <- stepEvent{early: true, res: r} })
			return err
		})
		p.ev <- stepEvent{res: res, err: err}
	}()
	return p, nil
}

// stepped completes a step once it is durable (or found the store ahead):
// the popped tasks in memory, the hand-backs, the acks.
func (pt *partition) stepped(ctx context.Context, p *pending, res store.StepResult) error {
	if !res.Applied {
		// The store is ahead of memory: another owner applied batches.
		// Trust the store, and see the batch again. What waits for the
		// next step goes back to being plain intake.
		pt.log.Warn("store ahead of memory; reloading")
		pt.s.Gauges.InFlight.Add(-pt.gauged[3])
		pt.gauged[3] = 0
		pt.hosts, pt.ready, pt.leases = map[string]*host{}, nil, nil
		for _, d := range pt.pre {
			if d.msg != nil { // a timer's reserved task: the reload sees to it
				pt.carry = append(pt.carry, d.msg)
			}
		}
		for _, d := range pt.held {
			pt.carry = append(pt.carry, d.msg)
		}
		pt.pre, pt.held, pt.later, pt.arrived = nil, nil, nil, nil
		return pt.load(ctx)
	}
	pt.applied++
	if err := pt.issued(ctx, p.due, p.req.Issue, res.Tasks, p.now, p.sent); err != nil {
		return err
	}
	for _, fd := range p.again {
		if err := pt.deferred(ctx, fd); err != nil {
			return err
		}
	}
	for _, m := range append(p.keep, p.redel...) {
		_ = m.Ack()
	}
	// Done reports of tasks now recorded may go to the next step.
	held := pt.held[:0]
	for _, d := range pt.held {
		if h := pt.hosts[d.host]; h != nil && h.unrecorded && h.inFlight != nil && h.inFlight.Task.ID == d.taskID {
			held = append(held, d)
			continue
		}
		pt.carry = append(pt.carry, d.msg)
	}
	pt.held = held
	pt.reschedule(time.Now())
	return nil
}

// take handles intake that comes while a step is pending (early stores).
// A done report that frees a host due at once with a reservation, of a task
// recorded by a committed step, publishes the reserved task now; the next
// step applies the done and records the task. A done report of a task that
// no committed step has recorded yet waits until one has (held): a task's
// done and the write that records it never share a step (the store applies
// dones before pops: the done would find nothing in flight). New URLs drop
// the reservations they outrank. Everything else waits for the next step.
func (pt *partition) take(ctx context.Context, batch []jetstream.Msg, now time.Time) {
	type cand struct {
		m   jetstream.Msg
		seq uint64
		fd  messages.FetchDone
	}
	var cands []cand
	for _, m := range batch {
		switch m.Headers().Get(messages.HeaderKind) {
		case "new":
			var nu messages.NewURLs
			if messages.Decode(m.Data(), &nu) == nil {
				for _, l := range nu.Links {
					if name, err := urlx.Host(l.URL); err == nil {
						if h := pt.hosts[name]; h != nil && h.next != nil && h.next.Outranked(l) {
							h.next = nil
						}
					}
				}
			}
		case "done":
			var fd messages.FetchDone
			md, err := m.Metadata()
			if err != nil || messages.Decode(m.Data(), &fd) != nil || fd.Expired || fd.Retry {
				break
			}
			h := pt.hosts[fd.Host]
			if h == nil || h.inFlight == nil || h.inFlight.Task.ID != fd.TaskID {
				// Stale, or its task is recorded by the pending step.
				pt.waitsForStep(md.Sequence.Stream, fd, now)
				break
			}
			if h.unrecorded {
				pt.waitsForStep(md.Sequence.Stream, fd, now)
				pt.held = append(pt.held, heldDone{msg: m, host: fd.Host, taskID: fd.TaskID})
				continue
			}
			cands = append(cands, cand{m, md.Sequence.Stream, fd})
			continue
		}
		pt.carry = append(pt.carry, m)
	}
	if len(cands) == 0 {
		return
	}
	seqs := make([]uint64, len(cands))
	for i, c := range cands {
		seqs[i] = c.seq
	}
	replayed, err := pt.s.o.Store.Applied(ctx, pt.p, seqs)
	for i, c := range cands {
		h := pt.hosts[c.fd.Host]
		var nb time.Time
		var capped bool
		if h != nil {
			nb, capped = pt.rest(c.fd, now)
		}
		if err != nil || replayed[i] || h == nil || h.inFlight == nil || h.inFlight.Task.ID != c.fd.TaskID ||
			h.next == nil || !pt.s.early || pt.s.o.MaxPages > 0 || pt.budgetOut || capped || nb.After(now.Add(pt.s.o.IssueAhead)) {
			pt.waitsForStep(c.seq, c.fd, now)
			pt.carry = append(pt.carry, c.m) // the next step, as usual
			continue
		}
		freed := store.Done{Host: c.fd.Host, TaskID: c.fd.TaskID, NotBefore: nb}
		if !nothingSent(c.fd) {
			h.rest = nb.Sub(now)
		}
		pt.remember(nil, []messages.FetchDone{c.fd}, []store.Done{freed}, now)
		reqs := pt.issues([]string{h.name}, now)
		pt.publishReserved(ctx, reqs)
		t := reqs[0].Next.Task(pt.p, reqs[0])
		pt.setTask(h, &t)
		h.unrecorded = true
		pt.pre = append(pt.pre, preDone{msg: c.m, seq: c.seq, done: freed, issue: reqs[0]})
	}
}

// takeDue publishes, while a step is pending, the reserved tasks of hosts
// due now: the next step records them (pre, without a message), as it does
// for a done report's reserved task (take). A due host without a
// reservation needs a write to pop its task: it waits for the step (later),
// which is hurried.
// With --max-pages every issue takes budget in the store first: nothing is
// taken here.
func (pt *partition) takeDue(ctx context.Context, now time.Time) {
	if !pt.s.early || pt.s.o.MaxPages > 0 || pt.budgetOut {
		return
	}
	var reqs []store.Issue
	hurry := false
	defer func() {
		if e, ok := pt.s.o.Store.(store.Early); ok && hurry {
			e.Hurry()
		}
	}()
	horizon := now.Add(pt.s.o.IssueAhead)
	for pt.ready.Len() > 0 && !pt.ready.peek().at.After(horizon) && len(reqs) < maxIssue {
		e := pt.ready.pop()
		h := pt.hosts[e.host]
		if h == nil {
			continue
		}
		h.scheduled = false
		switch {
		case h.inFlight == nil && h.queued > 0 && h.next != nil:
			reqs = append(reqs, pt.issues([]string{h.name}, now)...)
		case h.inFlight == nil && h.queued > 0:
			pt.later = append(pt.later, h.name)
			hurry = true // its pop waits for the pending step
		case h.inFlight == nil && h.nextAt.After(now):
			pt.later = append(pt.later, h.name)
		case h.inFlight == nil:
			delete(pt.hosts, h.name) // nothing queued and its gap is over
		}
	}
	if len(reqs) == 0 {
		return
	}
	pt.publishReserved(ctx, reqs)
	for _, r := range reqs {
		t := r.Next.Task(pt.p, r)
		h := pt.hosts[r.Host]
		pt.setTask(h, &t)
		h.unrecorded = true
		pt.pre = append(pt.pre, preDone{issue: r})
	}
}

// reschedule puts the hosts that waited for the step (later) back in the
// ready heap.
func (pt *partition) reschedule(now time.Time) {
	for _, name := range pt.later {
		if h := pt.hosts[name]; h != nil {
			pt.schedule(h, now)
		}
	}
	pt.later = pt.later[:0]
}

func (pt *partition) decode(m jetstream.Msg, enq *[]store.Queued, done *[]messages.FetchDone, again *[]messages.FetchDone) error {
	if pt.s.dlq.CrashLooping(m) {
		return fmt.Errorf("delivered more than %d times without being acked", pt.s.o.MaxDeliver)
	}
	switch kind := m.Headers().Get(messages.HeaderKind); kind {
	case "new":
		var nu messages.NewURLs
		if err := messages.Decode(m.Data(), &nu); err != nil {
			return err
		}
		for _, l := range nu.Links {
			h, err := urlx.Host(l.URL)
			if err != nil {
				pt.log.Warn("dropping invalid URL", "url", l.URL, "err", err)
				continue
			}
			*enq = append(*enq, store.Queued{Host: h, Link: l, Attempt: 1})
		}
	case "done":
		var fd messages.FetchDone
		if err := messages.Decode(m.Data(), &fd); err != nil {
			return err
		}
		if fd.Expired || fd.Retry {
			*again = append(*again, fd)
		} else {
			*done = append(*done, fd)
		}
	default:
		return fmt.Errorf("unknown %s header %q on %s", messages.HeaderKind, kind, m.Subject())
	}
	return nil
}

func (pt *partition) park(ctx context.Context, m jetstream.Msg, reason string) {
	pt.s.dlq.ParkOrLog(ctx, m, reason, pt.log)
}

// rule is the crawl's politeness rule (pkg/politeness).
func (s *Service) rule() politeness.Rule {
	return politeness.Rule{Delay: s.o.Delay, Factor: s.o.Factor, MaxCrawlDelay: s.o.MaxCrawlDelay, MaxGap: s.o.MaxGap}
}

// nothingSent tells whether fd's fetch sent nothing to the host: robots.txt
// (known already) forbade the URL, or the host was given up or refused, or
// its name does not exist.
func nothingSent(fd messages.FetchDone) bool {
	return fd.Disallowed && fd.Duration == 0 || fd.NoSuchHost || fd.ErrorKind == kindBlocked
}

// failed tells whether a fetch counts towards a host's failure backoff: no
// answer, or a server error.
func failed(fd messages.FetchDone) bool { return fd.Status == 0 && fd.Error != "" || fd.Status >= 500 }

// restUntil is when a host may be fetched again after fd: the politeness
// rule's rest, failure backoff included, capped by the max gap.
func (pt *partition) restUntil(fd messages.FetchDone, now time.Time) time.Time {
	at, capped := pt.rest(fd, now)
	if capped {
		pt.s.Stats.CrawlDelayCapped.Add(1)
	}
	return at
}

// rest is restUntil without counting a capped Crawl-delay.
func (pt *partition) rest(fd messages.FetchDone, now time.Time) (time.Time, bool) {
	if nothingSent(fd) {
		// Nothing was sent to the host (robots.txt, known already,
		// forbids the URL, or the host was given up or refused; its name
		// does not exist): the rest since its last request is still
		// running, or over, and its next URL may go at once. A given-up
		// or unresolvable host's queue then ends at the pace of the loop,
		// not one URL per --politeness-delay or failure backoff (up to the
		// max gap per URL with --ignore-robots).
		if h := pt.hosts[fd.Host]; h != nil && h.nextAt.After(now) {
			return h.nextAt, false
		}
		return now, false
	}
	failures := 0
	if h := pt.hosts[fd.Host]; h != nil {
		failures = h.failures
	}
	if failed(fd) {
		failures++
	} else {
		failures = 0
	}
	// The gap counts from the report's arrival, not from the fetcher's
	// finished_at: the benchmark's server-side audit, on a loaded machine,
	// saw a server return from its handler up to ~40 ms after the client had
	// its last byte, so a gap counted from finished_at ended early by the
	// server's clock. The report's trip back is the safety margin; issuing
	// ahead still hides the trip out to the fetcher.
	rest, capped := pt.s.rule().Rest(fd.CrawlDelay, fd.Duration, failures)
	return now.Add(rest), capped
}

// remember mirrors an applied batch in memory; freed[i] is done[i] as the
// store applied it.
func (pt *partition) remember(enq []store.Queued, done []messages.FetchDone, freed []store.Done, now time.Time) {
	for _, q := range enq {
		h := pt.host(q.Host)
		h.queued++
		if h.next != nil && h.next.Outranked(q.Link) {
			h.next = nil // the queue's head is no longer the reserved entry
		}
		pt.s.Stats.Enqueued.Add(1)
		pt.schedule(h, now)
	}
	for i, d := range done {
		h := pt.hosts[d.Host]
		if h == nil || h.inFlight == nil || h.inFlight.Task.ID != d.TaskID {
			continue // stale: the task was re-issued after its lease ran out
		}
		pt.setTask(h, nil)
		if failed(d) {
			h.failures++
		} else {
			h.failures = 0
		}
		h.nextAt = freed[i].NotBefore
		if pt.s.gapHist != nil {
			pt.s.gapHist.Observe(h.nextAt.Sub(now).Seconds())
		}
		pt.s.Stats.Done.Add(1)
		pt.schedule(h, now)
	}
}

// leaseLive tells whether a lease entry's task is still the host's task in
// flight; an entry for any other has nothing left to expire.
func (pt *partition) leaseLive(hostName, taskID string) bool {
	h := pt.hosts[hostName]
	return h != nil && h.inFlight != nil && h.inFlight.Task.ID == taskID
}

// expire gives a task's URL back to its host's queue, or ends it when it was
// issued maxAttempts times, and frees the host. It returns the task when the
// URL was ended, nil otherwise (requeued, or the task is no longer live).
func (pt *partition) expire(ctx context.Context, hostName, taskID string, maxAttempts int) (*store.InFlight, error) {
	if !pt.leaseLive(hostName, taskID) {
		return nil, nil
	}
	h := pt.hosts[hostName]
	var requeued bool
	if err := bus.Retry(ctx, "expire task", pt.log.Warn, nil, func() (err error) {
		requeued, err = pt.s.o.Store.Expire(ctx, pt.p, hostName, taskID, maxAttempts)
		return err
	}); err != nil {
		return nil, err
	}
	task := h.inFlight
	h.next = nil // a requeued URL goes before it
	if requeued {
		h.queued++
		task = nil
	}
	pt.setTask(h, nil)
	pt.schedule(h, time.Now())
	return task, nil
}

func (pt *partition) expireLeases(ctx context.Context, now time.Time) error {
	for pt.leases.Len() > 0 && !pt.leases.peek().at.After(now) {
		e := pt.leases.pop()
		if !pt.leaseLive(e.host, e.task) {
			continue
		}
		pt.s.Stats.Expired.Add(1)
		if in := *pt.hosts[e.host].inFlight; in.Task.Attempt >= pt.s.o.MaxAttempts {
			// Its last attempt: the store will drop the URL (Expire). Its
			// record goes out first, so a crash between the two loses
			// nothing: the task is still in flight on restart, its lease
			// expires again and the same message (the same ID) is published
			// again, which JetStream drops as a duplicate.
			reason := fmt.Sprintf("its fetch result never came back (%d tasks issued, each lease of %s ran out: a fetcher crashed or stalled); given up (--max-attempts %d)",
				in.Task.Attempt, in.LeaseUntil.Sub(in.Task.IssuedAt).Round(time.Second), pt.s.o.MaxAttempts)
			if err := pt.endRecord(ctx, in, reason, kindLost); err != nil {
				return err
			}
		}
		ended, err := pt.expire(ctx, e.host, e.task, pt.s.o.MaxAttempts)
		if err != nil {
			return err
		}
		if ended != nil {
			pt.s.Stats.Dropped.Add(1)
			pt.log.Warn("giving up on URL: its fetch result never came back", "url", ended.Task.URL, "attempts", ended.Task.Attempt)
		}
	}
	return nil
}

// deferred puts back the URL of a task the fetcher handed back unfetched
// (fd.Retry: robots.txt unreachable, its server's per-IP slot busy, a
// shutdown; fd.Expired: too late for its deadline), after the rest fd asks
// for. Not a lost task, but not free either: a URL is issued at most
// MaxAttempts + MaxDeferrals times in all (Attempt counts every issue), then
// it ends as failed, with a page record saying why.
func (pt *partition) deferred(ctx context.Context, fd messages.FetchDone) error {
	if !pt.leaseLive(fd.Host, fd.TaskID) {
		return nil // stale: the task was re-issued after its lease ran out
	}
	h := pt.hosts[fd.Host]
	rest, _ := pt.s.rule().Rest(fd.CrawlDelay, fd.Duration, 0)
	h.nextAt = time.Now().Add(max(rest, fd.RetryAfter))
	pt.s.Stats.Deferred.Add(1)
	if fd.Expired {
		pt.s.Stats.Expired.Add(1)
	}
	maxAttempts := pt.s.o.MaxAttempts + pt.s.o.MaxDeferrals
	if in := *h.inFlight; in.Task.Attempt >= maxAttempts {
		// The store will drop the URL: its record goes out first (see
		// expireLeases).
		why := fd.Error
		switch {
		case fd.Expired:
			why = "the task expired before a fetcher got to it"
		case why == "":
			why = "not fetched"
		}
		reason := fmt.Sprintf("handed back unfetched %d times, the last: %s; given up (--max-deferrals %d)",
			in.Task.Attempt, why, pt.s.o.MaxDeferrals)
		pt.log.Warn("giving up on URL: handed back unfetched too often", "url", in.Task.URL, "attempts", in.Task.Attempt, "last", why)
		if err := pt.endRecord(ctx, in, reason, kindDeferred); err != nil {
			return err
		}
	}
	ended, err := pt.expire(ctx, fd.Host, fd.TaskID, maxAttempts)
	if err != nil || ended == nil {
		return err
	}
	pt.s.Stats.DeferredOut.Add(1)
	return nil
}

// The error kinds of URLs the frontier ends (the fetcher's KindDeferred and
// KindLost; services do not import each other): handed back unfetched more
// than MaxDeferrals times, and lost MaxAttempts times.
const (
	kindDeferred = "deferred"
	kindLost     = "lost"
	kindBlocked  = "blocked" // the address guard refused the host: nothing was sent
)

// endRecord publishes the page record of a URL the frontier ends without a
// fetch, so that taps, --out and archives see its final state and why. Its
// message ID is the fetcher's for the task's page: there was none (or, for a
// lost task, none came back). Callers publish it before the store drops the
// URL, so that a crash in between replays the same message, which JetStream
// drops as a duplicate within the duplicate window.
func (pt *partition) endRecord(ctx context.Context, in store.InFlight, reason, kind string) error {
	t := in.Task
	p := messages.Page{V: messages.Version, TaskID: t.ID, URL: t.URL, Host: t.Host, Partition: t.Partition,
		Depth: t.Depth, Hops: t.Hops, Error: reason, ErrorKind: kind, FetchedAt: time.Now().UTC()}
	meta, err := messages.EncodePage(&p)
	if err != nil {
		return err
	}
	m := nats.NewMsg(pt.s.o.Names.PagesFetched())
	m.Header.Set(messages.HeaderSchema, messages.Schema("page"))
	m.Header.Set(messages.HeaderPage, string(meta))
	m.Header.Set("Trawler-URL", p.URL)
	m.Header.Set("Trawler-Status", "0")
	return bus.Retry(ctx, "publish page record", pt.log.Warn, nil, func() error {
		return bus.PublishAll(ctx, pt.s.o.JS, []*nats.Msg{m}, []string{"page:" + t.ID})
	})
}

// setTask records t as h's task in flight (nil: none), keeping the in-flight
// gauge exact: it is the store's count of tasks in flight at every step,
// which is what status shows.
func (pt *partition) setTask(h *host, t *store.InFlight) {
	d := int64(0)
	switch {
	case h.inFlight == nil && t != nil:
		d = 1
	case h.inFlight != nil && t == nil:
		d = -1
	}
	h.inFlight = t
	if d != 0 {
		pt.gauged[3] += d
		pt.s.Gauges.InFlight.Add(d)
	}
}

// issueDue issues one task for every host whose politeness gap has passed.
func (pt *partition) issueDue(ctx context.Context, now time.Time) error {
	due, err := pt.due(ctx, now)
	if err != nil || len(due) == 0 {
		return err
	}
	var tasks []store.InFlight
	var sent bool
	reqs := pt.issues(due, now) // the same task IDs on a retry
	pt.publishReserved(ctx, reqs)
	if err := bus.Retry(ctx, "pop queues", pt.log.Warn, nil, func() (err error) {
		tasks, err = store.PopEarly(ctx, pt.s.o.Store, pt.p, reqs, func(t []store.InFlight) { sent = pt.publishEarly(ctx, t) })
		return err
	}); err != nil {
		return err
	}
	return pt.issued(ctx, due, reqs, tasks, now, sent)
}

// due takes the hosts whose politeness gap has passed (or ends within
// IssueAhead) off the ready heap, within the crawl's page budget.
func (pt *partition) due(ctx context.Context, now time.Time) ([]string, error) {
	if pt.budgetOut {
		return nil, nil
	}
	var due []string
	horizon := now.Add(pt.s.o.IssueAhead)
	for pt.ready.Len() > 0 && !pt.ready.peek().at.After(horizon) && len(due) < maxIssue {
		e := pt.ready.pop()
		h := pt.hosts[e.host]
		if h == nil {
			continue
		}
		h.scheduled = false
		switch {
		case h.inFlight == nil && h.queued > 0:
			due = append(due, h.name)
		case h.inFlight == nil && !h.nextAt.After(now):
			delete(pt.hosts, h.name) // nothing queued and its gap is over
		}
		// A host with nothing queued whose gap is still running stays
		// known (unscheduled) until a URL arrives; gauge forgets it later.
	}
	if len(due) == 0 || pt.s.o.MaxPages <= 0 {
		return due, nil
	}
	var granted int
	if err := bus.Retry(ctx, "take budget", pt.log.Warn, nil, func() (err error) {
		granted, err = pt.s.o.Store.TakeBudget(ctx, len(due), pt.s.o.MaxPages)
		return err
	}); err != nil {
		return nil, err
	}
	if granted < len(due) {
		pt.budgetOut = true
		pt.log.Info("page budget spent; no more fetches will be issued", "max_pages", pt.s.o.MaxPages)
		for _, name := range due[granted:] {
			pt.schedule(pt.hosts[name], now)
		}
		due = due[:granted]
	}
	return due, nil
}

// issues are the store's pop requests for the due hosts.
func (pt *partition) issues(due []string, now time.Time) []store.Issue {
	lease := pt.s.o.TaskTTL + pt.s.o.FetchTimeout + pt.s.o.LeaseMargin
	reqs := make([]store.Issue, len(due))
	for i, name := range due {
		id := nuid.Next()
		if pt.s.early {
			id = "" // derived by the store from the queue entry
		}
		reqs[i] = store.Issue{Host: name, TaskID: id, IssuedAt: now, Deadline: now.Add(pt.s.o.TaskTTL), LeaseUntil: now.Add(lease)}
		h := pt.hosts[name]
		if h.nextAt.After(now) {
			reqs[i].NotBefore = h.nextAt
			reqs[i].Deadline = h.nextAt.Add(pt.s.o.TaskTTL)
		}
		if pt.s.early && h.next != nil {
			reqs[i].Next = h.next
		}
		h.next = nil // used, or to be read again by this pop
	}
	return reqs
}

// publishReserved publishes the reserved tasks of reqs (Issue.Next) before
// the write that records them, once, and remembers their IDs in published
// so that neither the early hand-over nor issued publishes them again. A
// task that did not go out is published with the others after the pop,
// under the same message ID. Crash safety: docs/frontier.md ("The reserved
// next task").
func (pt *partition) publishReserved(ctx context.Context, reqs []store.Issue) {
	var tasks []store.InFlight
	for _, r := range reqs {
		if r.Next != nil {
			tasks = append(tasks, r.Next.Task(pt.p, r))
		}
	}
	if len(tasks) == 0 {
		return
	}
	msgs, ids := pt.taskMsgs(tasks)
	if bus.PublishAll(ctx, pt.s.o.JS, msgs, ids) != nil {
		return
	}
	if pt.published == nil {
		pt.published = map[string]bool{}
	}
	for _, t := range tasks {
		pt.published[t.Task.ID] = true
	}
	pt.s.Stats.Reserved.Add(int64(len(tasks)))
}

// issued records the tasks popped for the due hosts (reqs) in memory, with
// their hosts' reservations, and publishes them.
func (pt *partition) issued(ctx context.Context, due []string, reqs []store.Issue, tasks []store.InFlight, now time.Time, sent bool) error {
	if len(due) == 0 {
		return nil
	}
	issued := make(map[string]bool, len(tasks))
	for i := range tasks {
		h := pt.host(tasks[i].Task.Host)
		h.queued--
		pt.setTask(h, &tasks[i])
		h.next, h.unrecorded = tasks[i].Next, false
		issued[h.name] = true
		pt.leases.push(tasks[i].LeaseUntil, h.name, tasks[i].Task.ID)
	}
	for _, r := range reqs {
		if r.Next != nil && !issued[r.Host] {
			// Cannot happen while the reservation rules hold (see
			// host.next): the store no longer had the entry published.
			pt.log.Error("a reserved task was published but its queue entry was gone; its fetch will be a stale report", "host", r.Host, "task", r.Next.TaskID, "url", r.Next.Queued.Link.URL)
			if h := pt.hosts[r.Host]; h != nil && h.unrecorded {
				pt.setTask(h, nil)
				h.unrecorded = false
			}
		}
	}
	for _, name := range due {
		if h := pt.hosts[name]; h != nil && !issued[name] {
			// Its queue was empty after all, or dropped by the host's
			// budget: nothing is left to issue.
			h.queued = 0
			pt.schedule(h, now)
		}
	}
	pt.s.Stats.Issued.Add(int64(len(tasks)))
	fresh := pt.unseen(tasks)
	for _, t := range tasks {
		delete(pt.published, t.Task.ID)
	}
	if sent || len(fresh) == 0 {
		return nil
	}
	return pt.publish(ctx, fresh)
}

// unseen are tasks less those already published before the partition
// loaded: the replay of a step whose commit a crash lost pops the same
// queue entries again, under the same derived IDs.
func (pt *partition) unseen(tasks []store.InFlight) []store.InFlight {
	if len(pt.published) == 0 {
		return tasks
	}
	var out []store.InFlight
	for _, t := range tasks {
		if !pt.published[t.Task.ID] {
			out = append(out, t)
		}
	}
	return out
}

// publishEarly publishes tasks the store popped in a write not yet durable
// (store.Early), once, so that a host's next task leaves while the commit
// runs, and reports whether they all went out; if not, issued publishes them
// after the write, retrying, under the same message IDs. Crash safety:
// docs/frontier.md ("Issuing before the commit").
func (pt *partition) publishEarly(ctx context.Context, tasks []store.InFlight) bool {
	if tasks = pt.unseen(tasks); len(tasks) == 0 {
		return true
	}
	msgs, ids := pt.taskMsgs(tasks)
	return bus.PublishAll(ctx, pt.s.o.JS, msgs, ids) == nil
}

// publish sends tasks to the fetchers; the task ID is the message ID.
func (pt *partition) publish(ctx context.Context, tasks []store.InFlight) error {
	msgs, ids := pt.taskMsgs(tasks)
	return bus.Retry(ctx, "publish tasks", pt.log.Warn, nil, func() error { return bus.PublishAll(ctx, pt.s.o.JS, msgs, ids) })
}

// taskMsgs are the fetch task messages of tasks and their message IDs.
func (pt *partition) taskMsgs(tasks []store.InFlight) ([]*nats.Msg, []string) {
	msgs := make([]*nats.Msg, len(tasks))
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		data, _ := messages.Encode(&t.Task)
		msgs[i] = nats.NewMsg(pt.s.o.Names.Fetch(pt.p))
		msgs[i].Data = data
		if !t.Task.NotBefore.IsZero() {
			msgs[i].Header.Set(messages.HeaderNotBefore, strconv.FormatInt(t.Task.NotBefore.UnixNano(), 10))
		}
		ids[i] = "task:" + t.Task.ID
	}
	return msgs, ids
}

// forget takes a stopped partition's figures out of the replica's gauges.
func (pt *partition) forget() {
	g := &pt.s.Gauges
	for i, v := range []*atomic.Int64{&g.Queued, &g.Ready, &g.Waiting, &g.InFlight} {
		v.Add(-pt.gauged[i])
	}
	pt.gauged = [4]int64{}
}

// gauge refreshes the replica's gauges with this partition's figures, at
// most once a second (a pass over the partition's live hosts).
func (pt *partition) gauge(now time.Time) {
	if now.Sub(pt.gaugedAt) < time.Second {
		return
	}
	pt.gaugedAt = now
	var cur [4]int64
	for name, h := range pt.hosts {
		if h.queued <= 0 && h.inFlight == nil && !h.scheduled && !h.nextAt.After(now) {
			delete(pt.hosts, name) // idle and rested: forget it
			continue
		}
		cur[0] += int64(h.queued)
		switch {
		case h.inFlight != nil: // counted by setTask, exactly
		case h.queued > 0 && h.nextAt.After(now):
			cur[2]++
		case h.queued > 0:
			cur[1]++
		}
	}
	g := &pt.s.Gauges
	cur[3] = pt.gauged[3]
	for i, v := range []*atomic.Int64{&g.Queued, &g.Ready, &g.Waiting} {
		v.Add(cur[i] - pt.gauged[i])
	}
	pt.gauged = cur
	// A lease entry outlives its task by the lease's length (minutes);
	// once stale entries outnumber the live ones, drop them, so memory
	// follows the tasks in flight rather than the crawl's rate.
	if pt.leases.Len() > 2*int(cur[3])+1024 {
		pt.leases.keep(func(e timeEntry) bool { return pt.leaseLive(e.host, e.task) })
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
