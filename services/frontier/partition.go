package frontier

// A partition's state in memory and its loop: one goroutine per owned
// partition takes intake, timers and its pending step's events in turn, so
// nothing here needs a lock.

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

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
	// then is the entry after the one the host's next issue pops (the
	// reservation's Then, kept when the reservation is handed): when the
	// task handed from the reservation ends before the step recording it
	// has run, its host's next task goes out from then at once (sent).
	then *store.Next
	// sent is that task's issue, published and not yet in flight here: the
	// host's next issue is this one (issues), and its reports and ends
	// wait for the step that records it, as an unrecorded task's do.
	sent *store.Issue
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
	applied uint64
	// lastApplied is the highest stream sequence the intake log holds as
	// far as this partition knows (loaded, then raised by each committed
	// step): a message above it was never applied, and costs no look at
	// the log (Store.LastApplied).
	lastApplied uint64
	hosts       map[string]*host
	ready       timeHeap // hosts waiting for their politeness gap
	leases      timeHeap // tasks in flight, by lease end
	budgetOut   bool
	// published are the task IDs found in the fetch stream or in done
	// reports when the partition loaded (early stores only): a replayed
	// step that pops one of them again is not published again.
	published map[string]bool
	// ahead are those of published that no task in flight in the store
	// matched when the partition loaded: tasks a crash left published (and
	// perhaps fetched) ahead of the step that records them. A done report
	// of one waits (held) until a step has recorded it again, up to the
	// time given; see holdAhead.
	ahead map[string]time.Time

	gaugedAt time.Time
	gauged   [4]int64 // queued, ready, waiting, in flight as last added to Gauges
	// congestion: how long tasks queue beyond their fetch, and the longest
	// host queue, for longest queue first (yield.go).
	congestion congestion

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
	// hurryNext makes the next step urgent: a host it records a task for
	// will be due before the group commit's pacing would end (hurryFor).
	hurryNext bool
	// promote: revisits that came due, for the next step to queue;
	// promoteAt: when to look for more (revisit.go).
	promote   []store.Scheduled
	promoteAt time.Time

	// ends carries the fetch ends heard in process (Service.Ended);
	// expected holds, by task ID, those that freed their host and handed
	// its next task, until their done report comes and the next step
	// records both (ended.go).
	ends      chan messages.FetchDone
	expected  map[string]*preDone
	endsLater map[string]endLater // ends of tasks not yet recorded, by task ID

	// evs carries the steps' events (early hand-over, outcome) to the
	// loop; committing counts the steps settled at their hand-over whose
	// commit has not yet come (early stores: see settle).
	evs        chan stepEvent
	committing int
}

// reserved tells whether h's next task can leave before a write pops it: a
// reservation, or a task sent already from the entry after one.
func (h *host) reserved() bool { return h.next != nil || h.sent != nil }

// reserve takes the reservation of the task just popped or recorded for h
// (t.Next). With a task sent ahead of it (h.sent) the reservation is that
// task's entry when nothing outranked it, and then what follows it.
func (h *host) reserve(next *store.Next) {
	switch {
	case h.sent == nil:
		h.next = next
		h.then = nil
		if next != nil {
			h.then = next.Then
		}
	case next != nil && next.TaskID == h.sent.Next.TaskID:
		h.next, h.then = nil, next.Then
	default:
		h.next, h.then = nil, nil
	}
}

// outranked drops the reserved entries a URL l queued for h goes before:
// the queue's head, or the entry after it, is no longer the one read.
func (h *host) outranked(l messages.Link) {
	if h.next != nil && h.next.Outranked(l) {
		h.dropReservation()
	}
	if h.then != nil && h.then.Outranked(l) {
		h.then = nil
	}
}

// dropReservation forgets what a requeued or shallower URL now goes before
// (a task sent already stays: its entry is popped by its key).
func (h *host) dropReservation() { h.next, h.then = nil, nil }

// sentTask tells whether taskID is the task sent ahead for h.
func (h *host) sentTask(taskID string) bool { return h.sent != nil && h.sent.Next.TaskID == taskID }

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
// and its outcome come back to the loop on partition.evs, in that order.
type pending struct {
	req         store.StepRequest
	due         []string
	keep, redel []jetstream.Msg
	again       []messages.FetchDone
	now         time.Time
	sent        bool
	settled     bool // completed at its hand-over; its outcome only acks (settle)
}

type stepEvent struct {
	p     *pending
	early bool
	res   store.StepResult
	err   error
}

// maxAhead bounds a partition's steps settled at their hand-over and not
// yet committed: the tasks a crash can leave published ahead of their
// record, per partition (docs/frontier.md, "Steps chained in one
// transaction").
const maxAhead = 64

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
	msgs, stopPull, err := bus.PullOwned(ctx, cons, maxBatch, pt.log)
	if err != nil {
		return err
	}
	defer stopPull()
	defer pt.listenEnds()()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	pt.evs = make(chan stepEvent, 2*maxAhead+8)
	var pend *pending // the step not yet settled, if any: one at a time
	// abandon waits for every step in progress to end, ignoring their
	// results, before the loop returns an error: a restart reloads from the
	// store, which no step of this run may write after that.
	abandon := func(err error) error {
		for pend != nil || pt.committing > 0 {
			e := <-pt.evs
			switch {
			case e.early:
			case e.p == pend:
				pend = nil
			case e.p.settled:
				pt.committing--
			}
		}
		return err
	}
	// finish waits for the steps' outcomes and completes them.
	finish := func() error {
		for pend != nil || pt.committing > 0 {
			if err := pt.event(work, &pend, <-pt.evs); err != nil {
				return abandon(err)
			}
		}
		return nil
	}
	stop := func() error {
		// Finish the step in hand and what waits for the next one, so
		// a clean stop leaves no task published unrecorded.
		for pend != nil || pt.committing > 0 || len(pt.pre) > 0 {
			if err := finish(); err != nil {
				return err
			}
			if len(pt.pre) > 0 || len(pt.carry) > 0 {
				batch, pre := pt.carry, pt.pre
				pt.carry, pt.pre = nil, nil
				var err error
				if pend, err = pt.apply(work, batch, pre); err != nil {
					return abandon(err)
				}
			}
		}
		return nil
	}
	for {
		now := time.Now()
		if pend == nil && pt.committing < maxAhead {
			if err := pt.expireLeases(work, now); err != nil {
				return abandon(err)
			}
			// Due hosts with a reservation go out now and are recorded
			// by a step that waits for company; the others are popped
			// by an urgent write, as before.
			pt.takeDue(work, now)
			pt.reschedule(now)
			if err := pt.lookForRevisits(work, now); err != nil {
				return abandon(err)
			}
			var err error
			if len(pt.carry) > 0 || len(pt.pre) > 0 || len(pt.promote) > 0 {
				batch, pre := pt.carry, pt.pre
				pt.carry, pt.pre = nil, nil
				pend, err = pt.apply(work, batch, pre)
			} else {
				err = pt.issueDue(work, now)
			}
			if err != nil {
				return abandon(err)
			}
			if pend != nil && !pt.s.early {
				if err := finish(); err != nil {
					return err
				}
				continue
			}
		}
		busy := pend != nil || pt.committing >= maxAhead // no new step now
		if busy {
			pt.takeDue(work, now)
		}
		pt.gauge(now)
		wake := pt.nextWake(now)
		in, ev := msgs, (<-chan stepEvent)(nil)
		if pend != nil || pt.committing > 0 {
			ev = pt.evs // the steps' events wake the loop too
		}
		if busy {
			// Leases wait for the step.
			wake = pt.nextDue(now)
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
			if !busy {
				p, err := pt.apply(work, batch, nil)
				if err != nil {
					return abandon(err)
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
				return abandon(err)
			}
		case fd := <-pt.ends:
			pt.ended(work, fd, time.Now())
		case <-timer.C:
		}
	}
}

// event handles one event of a step: its early hand-over (publish the
// tasks; with an early store, settle the step: *pend becomes nil and the
// next step may start) or its outcome (complete it, or only ack what a
// settled step applied).
func (pt *partition) event(ctx context.Context, pend **pending, e stepEvent) error {
	if after := pt.s.o.AfterStep; after != nil {
		defer after()
	}
	p := e.p
	if e.early {
		if p.settled {
			return nil
		}
		if pt.publishEarly(ctx, e.res.Tasks) {
			p.sent = true
		}
		pt.recordedEarly(ctx, e.res.Tasks)
		if !pt.s.early || !e.res.Applied {
			return nil // the outcome completes it (a store ahead reloads)
		}
		if *pend == p {
			*pend = nil
		}
		p.settled = true
		pt.committing++
		return pt.settle(ctx, p, e.res)
	}
	if *pend == p {
		*pend = nil
	}
	if p.settled {
		pt.committing--
		if e.err != nil {
			return e.err // the step was not committed: restart from the store
		}
		pt.ack(p)
		return nil
	}
	if e.err != nil {
		return e.err
	}
	return pt.stepped(ctx, p, e.res)
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
	if !pt.budgetOut && pt.ready.Len() > 0 && pt.ready.peek().at.Add(-pt.s.o.IssueAhead).Before(next) {
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

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
