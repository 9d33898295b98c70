package frontier

// Issuing: which hosts are due, the tasks popped for them or published from
// their reservations, and their publication on the fetch stream.

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// takeDue publishes, while a step is pending, the reserved tasks of hosts
// due now: the next step records them (pre, without a message), as it does
// for a done report's reserved task (take). A due host without a
// reservation needs a write to pop its task: it waits for the step (later),
// which is hurried.
// With --max-pages each such task takes its budget first (grant).
func (pt *partition) takeDue(ctx context.Context, now time.Time) {
	if !pt.s.early || pt.budgetOut {
		return
	}
	var reqs []store.Issue
	hurry := false
	defer func() {
		if e, ok := pt.s.o.Store.(store.Early); ok && hurry {
			e.Hurry()
		}
	}()
	pt.popReady(now, func(h *host) bool {
		switch {
		case h.inFlight == nil && h.queued > 0 && h.reserved() && pt.grant(ctx):
			reqs = append(reqs, pt.issues([]string{h.name}, now)...)
			return true
		case h.inFlight == nil && h.queued > 0 && h.reserved():
			pt.later = append(pt.later, h.name) // no budget: the step's issue asks again
		case h.inFlight == nil && h.queued > 0:
			pt.later = append(pt.later, h.name)
			hurry = true // its pop waits for the pending step
		case h.inFlight == nil && h.nextAt.After(now):
			pt.later = append(pt.later, h.name)
		case h.inFlight == nil:
			delete(pt.hosts, h.name) // nothing queued and its gap is over
		}
		return false
	})
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
	pt.popReady(now, func(h *host) bool {
		switch {
		case h.inFlight == nil && h.queued > 0:
			due = append(due, h.name)
			return true
		case h.inFlight == nil && !h.nextAt.After(now):
			delete(pt.hosts, h.name) // nothing queued and its gap is over
		}
		// A host with nothing queued whose gap is still running stays
		// known (unscheduled) until a URL arrives; gauge forgets it later.
		return false
	})
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
		pt.spent()
		for _, name := range due[granted:] {
			pt.schedule(pt.hosts[name], now)
		}
		due = due[:granted]
	}
	return due, nil
}

// grant takes one unit of --max-pages' budget for a task about to leave
// from a reservation, outside a step. The embedded store grants from memory
// (Bolt.TakeBudget), so a crawl with a budget keeps the turnaround of one
// without. False when the budget is spent, or the store failed: the host
// then waits for a step, whose issue asks again with retries.
func (pt *partition) grant(ctx context.Context) bool {
	if pt.s.o.MaxPages <= 0 {
		return true
	}
	if pt.budgetOut {
		return false
	}
	n, err := pt.s.o.Store.TakeBudget(ctx, 1, pt.s.o.MaxPages)
	if err != nil {
		pt.log.Warn("taking page budget failed; the host's task waits for the next step", "err", err)
		return false
	}
	if n == 0 {
		pt.spent()
		return false
	}
	return true
}

// spent marks the crawl's page budget used up: nothing more is issued.
func (pt *partition) spent() {
	pt.budgetOut = true
	pt.log.Info("page budget spent; no more fetches will be issued", "max_pages", pt.s.o.MaxPages)
}

// issues are the store's pop requests for the due hosts.
func (pt *partition) issues(due []string, now time.Time) []store.Issue {
	reqs := make([]store.Issue, len(due))
	for i, name := range due {
		h := pt.hosts[name]
		if pt.s.early && h.sent != nil {
			// Published already (sendThen): this pop records it. h.then
			// stays the entry after it.
			reqs[i] = *h.sent
			h.sent, h.next = nil, nil
			continue
		}
		reqs[i] = pt.issue(h, now)
		if pt.s.early && h.next != nil {
			reqs[i].Next = h.next
		} else {
			h.then = nil
		}
		h.next = nil // used, or to be read again by this pop
	}
	return reqs
}

// issue is the store's pop request for h's next task, issued now.
func (pt *partition) issue(h *host, now time.Time) store.Issue {
	lease := pt.s.o.TaskTTL + pt.s.o.FetchTimeout + pt.s.o.LeaseMargin
	id := nuid.Next()
	if pt.s.early {
		id = "" // derived by the store from the queue entry
	}
	r := store.Issue{Host: h.name, TaskID: id, IssuedAt: now, Deadline: now.Add(pt.s.o.TaskTTL), LeaseUntil: now.Add(lease)}
	if h.nextAt.After(now) {
		r.NotBefore = h.nextAt
		r.Deadline = h.nextAt.Add(pt.s.o.TaskTTL)
	}
	return r
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
		if r.Next != nil && !pt.published[r.Next.TaskID] { // a task sent ahead went out once
			tasks = append(tasks, r.Next.Task(pt.p, r))
		}
	}
	if len(tasks) == 0 {
		return
	}
	msgs, ids := pt.taskMsgs(tasks)
	if pt.send(ctx, msgs, ids) != nil {
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
		issued[h.name] = true
		if h.unrecorded && h.inFlight != nil && h.inFlight.Task.ID != tasks[i].Task.ID {
			// Done already: its report came after this step's early
			// hand-over (recordedEarly) and published the host's
			// reserved task, which the next step records.
			continue
		}
		pt.setTask(h, &tasks[i])
		h.reserve(tasks[i].Next)
		h.unrecorded = false
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
		delete(pt.ahead, t.Task.ID)
	}
	if sent || len(fresh) == 0 {
		return nil
	}
	return pt.publish(ctx, fresh)
}

// recordedEarly takes the tasks of the pending step as recorded as soon as
// its function has run (its early hand-over): they are final then unless
// its commit fails, and a failed commit is tried again with the same
// request, which gives the same tasks. Their hosts get them in flight with
// their reservations, and the done reports held for them go on now: a host
// crawled without a delay publishes its next task while the step's commit
// (two fsyncs) runs, instead of after it. At most two tasks of a host are
// then published ahead of their durable record, which a restart's scan
// finds as it finds one (docs/frontier.md, "Done before the commit").
func (pt *partition) recordedEarly(ctx context.Context, tasks []store.InFlight) {
	var released []jetstream.Msg
	var recorded []string
	for i := range tasks {
		t := &tasks[i]
		h := pt.hosts[t.Task.Host]
		switch {
		case h == nil:
			continue
		case h.inFlight == nil:
			// Popped by this step: in flight from now (issued counts
			// it off the queue and starts its lease at the outcome).
			pt.setTask(h, t)
		case h.unrecorded && h.inFlight.Task.ID == t.Task.ID:
			// Published from its reservation; this step records it.
		default:
			continue // moved on already (a retried step's second hand-over)
		}
		h.reserve(t.Next)
		h.unrecorded = false
		recorded = append(recorded, t.Task.ID)
		held := pt.held[:0]
		for _, d := range pt.held {
			if d.host == h.name && d.taskID == t.Task.ID {
				released = append(released, d.msg)
				continue
			}
			held = append(held, d)
		}
		pt.held = held
	}
	if len(pt.endsLater) > 0 {
		pt.endedLater(ctx, recorded)
	}
	if len(released) > 0 {
		pt.take(ctx, released, time.Now())
	}
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
	return pt.send(ctx, msgs, ids) == nil
}

// publish sends tasks to the fetchers; the task ID is the message ID.
func (pt *partition) publish(ctx context.Context, tasks []store.InFlight) error {
	msgs, ids := pt.taskMsgs(tasks)
	return bus.Retry(ctx, "publish tasks", pt.log.Warn, nil, func() error { return pt.send(ctx, msgs, ids) })
}

// send gives tasks to the fetcher in this process when there is one with
// room (Options.Inbox), else publishes them to the fetch stream.
func (pt *partition) send(ctx context.Context, msgs []*nats.Msg, ids []string) error {
	n := pt.s.o.Inbox.Hand(msgs, ids)
	pt.s.Stats.Handed.Add(int64(n))
	if n == len(msgs) {
		return nil
	}
	return bus.PublishAll(ctx, pt.s.o.JS, msgs[n:], ids[n:])
}

// taskMsgs are the fetch task messages of tasks and their message IDs.
func (pt *partition) taskMsgs(tasks []store.InFlight) ([]*nats.Msg, []string) {
	msgs := make([]*nats.Msg, len(tasks))
	ids := make([]string, len(tasks))
	now := time.Now()
	for i, t := range tasks {
		data, _ := messages.Encode(&t.Task)
		msgs[i] = nats.NewMsg(pt.s.o.Names.Fetch(pt.p))
		msgs[i].Data = data
		if !t.Task.NotBefore.IsZero() {
			msgs[i].Header.Set(messages.HeaderNotBefore, strconv.FormatInt(t.Task.NotBefore.UnixNano(), 10))
			if ahead := t.Task.NotBefore.Sub(now); ahead > 0 {
				msgs[i].Header.Set(messages.HeaderHoldFor, strconv.FormatInt(int64(ahead), 10))
			}
		}
		ids[i] = "task:" + t.Task.ID
	}
	return msgs, ids
}

// popReady takes the hosts due by now (or within IssueAhead) off the ready
// heap and hands each to take, which reports whether it took the host; at
// most maxIssue are taken in one call.
func (pt *partition) popReady(now time.Time, take func(h *host) bool) {
	horizon := now.Add(pt.s.o.IssueAhead)
	for n := 0; pt.ready.Len() > 0 && !pt.ready.peek().at.After(horizon) && n < maxIssue; {
		e := pt.ready.pop()
		h := pt.hosts[e.host]
		if h == nil {
			continue
		}
		h.scheduled = false
		if take(h) {
			n++
		}
	}
}
