package frontier

// Intake: new URLs and done reports, applied in memory and then by a store
// step that runs beside the loop; what arrives while a step is pending waits
// for the next one, or publishes a host's reserved task at once (take).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

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
	promote := pt.promote // revisits that came due (revisit.go)
	pt.promote = nil
	var replayed []bool
	if err := bus.Retry(ctx, "read intake log", pt.log.Warn, hold, func() (err error) {
		replayed, err = pt.replayed(ctx, all)
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
			if d, ok := pt.reported(done[nd], m, all[i]); ok {
				// Its host was freed when the fetch ended (ended.go):
				// this step records the next task with it.
				done = done[:nd]
				pre = append(pre[:len(pre):len(pre)], d)
				continue
			}
			if pt.unrecordedTask(done[nd]) {
				// The report of a task no step has recorded yet: the
				// step that does must come first (see take).
				_ = m.InProgress()
				pt.held = append(pt.held, heldDone{msg: m, host: done[nd].Host, taskID: done[nd].TaskID})
				done = done[:nd]
				continue
			}
		}
		if len(done) > nd && pt.holdAhead(m, done[nd]) {
			done = done[:nd]
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
	if len(keep) == 0 && len(pre) == 0 && len(promote) == 0 {
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
	pt.remember(append(enq[:len(enq):len(enq)], promoted(promote)...), done, freed, now)
	pt.s.Stats.Revisits.Add(int64(len(promote)))
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
	for _, r := range issues {
		if r.Next != nil {
			// In flight from now, as a reserved task published while a
			// step is pending (take): its done report, should it come
			// before this step's early hand-over, waits for that.
			t := r.Next.Task(pt.p, r)
			pt.setTask(pt.hosts[r.Host], &t)
			pt.hosts[r.Host].unrecorded = true
		}
	}
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
	// for this commit; or if a host whose task it records is due already
	// (hurryNext: its fetch ended, robots.txt forbidding it). Otherwise the step waits for company (one commit
	// per interval under load, not one per page).
	//
	// A step that issues for a host resting that briefly is also chained:
	// the host's next step comes within a turnaround, and the embedded
	// store keeps the transaction open for it. A step started while an
	// earlier one has not committed is written After it.
	hurry, chain := pt.hurryNext, false
	pt.hurryNext = false
	for _, r := range issues {
		if r.Next == nil || !pt.published[r.Next.TaskID] || pt.restsBriefly(r.Host) {
			hurry = true
		}
		if pt.restsBriefly(r.Host) {
			chain = true
		}
	}
	p := &pending{due: due, keep: keep, redel: redelivered, again: again, now: now,
		req: store.StepRequest{Seq: pt.applied + 1, Enqueue: enq, Done: freed, Applied: seqs, Floor: floor, Issue: issues,
			Hurry: hurry, Chain: chain, After: pt.committing > 0, Promote: promote}}
	st, part, log, evs := pt.s.o.Store, pt.p, pt.log, pt.evs
	go func() {
		var res store.StepResult
		// A step is not tried again once its results were handed over (its
		// commit failed: later steps may stand on it) or when it was
		// written After a step that is not in the store: the partition
		// restarts from the store instead.
		heard := false
		var final error
		err := bus.Retry(ctx, "apply intake", log.Warn, hold, func() error {
			r, err := store.StepEarly(ctx, st, part, p.req, func(r store.StepResult) {
				heard = true
				evs <- stepEvent{p: p, early: true, res: r}
			})
			if err != nil && (heard || errors.Is(err, store.ErrChainBroken)) {
				final = err
				return nil
			}
			res = r
			return err
		})
		if final != nil {
			err = final
		}
		evs <- stepEvent{p: p, res: res, err: err}
	}()
	return p, nil
}

// holdAhead holds the done report of a task a crash left published ahead of
// the step that records it (partition.ahead), until a step has recorded it:
// applied before, in the step that records it or an earlier one, it would
// find nothing in flight (the store applies dones before pops), and the
// task, recorded then, would stand in flight until its lease ran out, its
// host with it. stepped carries it to the next step, which applies it once
// the task is in flight or holds it again.
func (pt *partition) holdAhead(m jetstream.Msg, fd messages.FetchDone) bool {
	until, ok := pt.ahead[fd.TaskID]
	if !ok {
		return false
	}
	if time.Now().After(until) {
		delete(pt.ahead, fd.TaskID)
		return false
	}
	h := pt.hosts[fd.Host]
	if h == nil || h.inFlight == nil && h.queued <= 0 || h.inFlight != nil && h.inFlight.Task.ID == fd.TaskID {
		// Recorded, or a host with nothing left to pop: the report is
		// applied now (a stale one does nothing), not held for a minute
		// at the end of a crawl.
		return false
	}
	_ = m.InProgress() // it waits for a step: keep its ack wait from running out
	pt.held = append(pt.held, heldDone{msg: m, host: fd.Host, taskID: fd.TaskID})
	return true
}

// stepped completes a step once it is durable (or found the store ahead):
// settle, then the acks.
func (pt *partition) stepped(ctx context.Context, p *pending, res store.StepResult) error {
	if err := pt.settle(ctx, p, res); err != nil || !res.Applied {
		return err // a store ahead reloaded: the batch comes again
	}
	pt.ack(p)
	return nil
}

// ack acknowledges a step's intake, once the step is durable.
func (pt *partition) ack(p *pending) {
	for _, m := range append(p.keep, p.redel...) {
		_ = m.Ack()
	}
}

// settle completes a step in memory: the popped tasks, the hand-backs, the
// held reports its tasks release. An early store's step is settled at its
// hand-over, before its commit (its results are final then unless the
// commit fails, and then the partition restarts from the store), so the
// partition's next step need not wait for this one's commit: with
// chained steps one transaction records several in turn. A step that found
// the store ahead of memory reloads.
func (pt *partition) settle(ctx context.Context, p *pending, res store.StepResult) error {
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
		pt.pre, pt.held, pt.later, pt.arrived, pt.expected, pt.endsLater = nil, nil, nil, nil, nil, nil
		return pt.load(ctx)
	}
	pt.applied++
	for _, seq := range p.req.Applied {
		pt.lastApplied = max(pt.lastApplied, seq)
	}
	if err := pt.issued(ctx, p.due, p.req.Issue, res.Tasks, p.now, p.sent); err != nil {
		return err
	}
	for _, fd := range p.again {
		if err := pt.deferred(ctx, fd); err != nil {
			return err
		}
	}
	// Done reports of tasks now recorded may go to the next step.
	held := pt.held[:0]
	for _, d := range pt.held {
		if h := pt.hosts[d.host]; h != nil && (h.unrecorded && h.inFlight != nil && h.inFlight.Task.ID == d.taskID || h.sentTask(d.taskID)) {
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
	hurried := false
	for _, m := range batch {
		switch m.Headers().Get(messages.HeaderKind) {
		case "new":
			var nu messages.NewURLs
			if messages.Decode(m.Data(), &nu) == nil {
				for _, l := range nu.Links {
					if name, err := urlx.Host(l.URL); err == nil {
						if h := pt.hosts[name]; h != nil {
							h.outranked(l)
						}
						if !hurried && pt.waitsForLinks(name, now) {
							hurried = true
							pt.hurryForLinks()
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
			if d, ok := pt.reported(fd, m, md.Sequence.Stream); ok {
				pt.pre = append(pt.pre, d) // its host was freed when the fetch ended
				continue
			}
			h := pt.hosts[fd.Host]
			if h != nil && h.sentTask(fd.TaskID) {
				// Sent after the task in flight (sendThen): it waits
				// for the step that records it, as below.
				pt.waitsForStep(md.Sequence.Stream, fd, now)
				pt.held = append(pt.held, heldDone{msg: m, host: fd.Host, taskID: fd.TaskID})
				continue
			}
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
	replayed, err := pt.replayed(ctx, seqs)
	for i, c := range cands {
		h := pt.hosts[c.fd.Host]
		var nb time.Time
		var capped bool
		// A report held for its task's record rests its host from when
		// it came, not from its release.
		came, ok := pt.arrived[c.seq]
		if !ok {
			came = now
		}
		if h != nil {
			nb, capped, _ = pt.rest(c.fd, came)
		}
		if err != nil || replayed[i] || h == nil || h.inFlight == nil || h.inFlight.Task.ID != c.fd.TaskID ||
			!h.reserved() || !pt.s.early || pt.budgetOut || capped || nb.After(now.Add(pt.s.o.IssueAhead)) || !pt.grant(ctx) {
			pt.waitsForStep(c.seq, c.fd, now)
			pt.carry = append(pt.carry, c.m) // the next step, as usual
			continue
		}
		d := pt.handReserved(ctx, h, c.fd, nb, came, now)
		d.msg, d.seq = c.m, c.seq
		pt.pre = append(pt.pre, d)
	}
}

// handReserved frees h in memory after fd (resting until nb, counted from
// came) and hands its reserved next task, in flight from now and recorded by
// a later step: the done and the issue that step applies (take, ended).
func (pt *partition) handReserved(ctx context.Context, h *host, fd messages.FetchDone, nb, came, now time.Time) preDone {
	freed := []store.Done{{Host: fd.Host, TaskID: fd.TaskID, NotBefore: nb}}
	if !nothingSent(fd) {
		h.rest = nb.Sub(came)
	}
	pt.remember(nil, []messages.FetchDone{fd}, freed, now)
	reqs := pt.issues([]string{h.name}, now)
	pt.publishReserved(ctx, reqs)
	t := reqs[0].Next.Task(pt.p, reqs[0])
	pt.setTask(h, &t)
	h.unrecorded = true
	return preDone{done: freed[0], issue: reqs[0]}
}

// replayed reports which of seqs the intake log holds, asking the store only
// about those at or below lastApplied: a message delivered for the first
// time, nearly all of them, is above it.
func (pt *partition) replayed(ctx context.Context, seqs []uint64) ([]bool, error) {
	var ask []uint64
	for _, s := range seqs {
		if s <= pt.lastApplied {
			ask = append(ask, s)
		}
	}
	out := make([]bool, len(seqs))
	if len(ask) == 0 {
		return out, nil
	}
	got, err := pt.s.o.Store.Applied(ctx, pt.p, ask)
	if err != nil {
		return nil, err
	}
	for i, j := 0, 0; i < len(seqs); i++ {
		if seqs[i] <= pt.lastApplied {
			out[i] = got[j]
			j++
		}
	}
	return out, nil
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
			switch {
			case pt.s.o.Revisit == nil:
				l.Revisit = nil // a sitemap's hints; no revisits, no digest
			case l.Revisit == nil:
				l.Revisit = &messages.Revisit{} // a first visit: the fetcher digests it
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

// remember mirrors an applied batch in memory; freed[i] is done[i] as the
// store applied it.
func (pt *partition) remember(enq []store.Queued, done []messages.FetchDone, freed []store.Done, now time.Time) {
	for _, q := range enq {
		h := pt.host(q.Host)
		h.queued++
		h.outranked(q.Link)
		pt.s.Stats.Enqueued.Add(1)
		pt.schedule(h, now)
	}
	for i, d := range done {
		h := pt.hosts[d.Host]
		if h == nil || h.inFlight == nil || h.inFlight.Task.ID != d.TaskID {
			continue // stale: the task was re-issued after its lease ran out
		}
		freed[i].Revisit = pt.nextVisit(h.inFlight.Task, d, now)
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
