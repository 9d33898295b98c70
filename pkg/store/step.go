package store

import (
	"context"
	"errors"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// StepRequest is one turn of a frontier partition's loop: an intake batch to
// apply (as Frontier.Apply), the batch's stream sequences to mark applied
// (as Frontier.MarkApplied) and the hosts due now to pop (as Frontier.Pop).
type StepRequest struct {
	Seq     uint64 // the batch's apply number, as Apply's seq
	Enqueue []Queued
	Done    []Done
	Applied []uint64 // stream sequences of the batch's messages
	Floor   uint64   // forget applied sequences at or below it (0: keep)
	Issue   []Issue  // hosts due now, popped after the batch is applied
	// Promote moves revisits that came due (as Frontier.Due returned them)
	// out of the schedule and into their hosts' queues, before Issue is
	// popped, outside the per-host limits: a revisit is a URL the crawl
	// admitted already. An entry no longer in the schedule (a retried
	// step moved it) is skipped.
	Promote []Scheduled
	// Hurry: the caller waits for this step's tasks (one not yet
	// published from a reservation): an Early store commits it without
	// waiting for company. Other stores ignore it.
	Hurry bool
	// Chain: the caller does not wait for this step's commit and will
	// write its next step within a host's turnaround: an Early store keeps
	// the transaction open for it (lingers). Other stores ignore it.
	Chain bool
	// After: the caller started this step before its previous one (this
	// Seq - 1) committed; it applies only on top of that one, and fails
	// with ErrChainBroken (changing nothing) if that one is not in the
	// store: its group failed, and the caller must reload.
	After bool
}

// ErrChainBroken is the error of a step written After a step that is not in
// the store (see StepRequest.After).
var ErrChainBroken = errors.New("store: the step before this one is not in the store")

// StepResult is what a step did: Applied is false when the batch was applied
// before (the store is ahead of the caller's memory; nothing changed), and
// Tasks are the popped tasks in request order.
type StepResult struct {
	Applied bool
	Tasks   []InFlight
}

// Stepper is a Frontier that does a whole step in one atomic write: one
// commit per turn of the frontier's loop instead of three, so the time from
// a finished fetch to the host's next task is one commit, not three.
type Stepper interface {
	Step(ctx context.Context, p int, r StepRequest) (StepResult, error)
}

// Step runs r on f: in one write when f is a Stepper, otherwise as Apply,
// MarkApplied and Pop in turn. In the latter case an error may leave the
// first parts done; retrying the step then finds the batch applied
// (Applied false), which a caller handles as it handles a store ahead of
// its memory: by reloading, which also publishes popped tasks it never saw.
func Step(ctx context.Context, f Frontier, p int, r StepRequest) (StepResult, error) {
	if s, ok := f.(Stepper); ok {
		return s.Step(ctx, p, r)
	}
	if len(r.Promote) > 0 {
		return StepResult{}, errors.New("store: this store cannot promote revisits (not a Stepper)")
	}
	ok, err := f.Apply(ctx, p, r.Seq, r.Enqueue, r.Done)
	if err != nil || !ok {
		return StepResult{}, err
	}
	if err := f.MarkApplied(ctx, p, r.Applied, r.Floor); err != nil {
		return StepResult{}, err
	}
	var tasks []InFlight
	if len(r.Issue) > 0 {
		if tasks, err = f.Pop(ctx, p, r.Issue); err != nil {
			return StepResult{}, err
		}
	}
	return StepResult{Applied: true, Tasks: tasks}, nil
}

// Early is a Frontier whose writes can hand their results over before
// they are durable (bbolt's group commit): early is called with the
// results once they are final unless the commit fails, while the commit goes
// on; the method then returns as Step and Pop do, once the write is durable
// or failed. A caller that publishes tasks from early must cope with the
// commit failing after it (retrying with the same request gives the same
// tasks) and with a crash before the commit (docs/frontier.md).
type Early interface {
	StepEarly(ctx context.Context, p int, r StepRequest, early func(StepResult)) (StepResult, error)
	PopEarly(ctx context.Context, p int, reqs []Issue, early func([]InFlight)) ([]InFlight, error)
	// PaceInterval is the longest a write that is not urgent may wait for
	// company before its commit starts.
	PaceInterval() time.Duration
	// Hurry commits the writes waiting now, or the next group when none
	// waits yet, without more waiting for company: their caller holds work
	// that needs them durable.
	Hurry()
}

// PaceInterval is Early's; see CommitInterval.
func (b *Bolt) PaceInterval() time.Duration { return max(b.writes.interval, 0) }

// Hurry is Early's.
func (b *Bolt) Hurry() { b.writes.hurry() }

// StepEarly is Step that calls early with the result before the write is
// durable when f is Early, and after the write otherwise.
func StepEarly(ctx context.Context, f Frontier, p int, r StepRequest, early func(StepResult)) (StepResult, error) {
	if e, ok := f.(Early); ok {
		return e.StepEarly(ctx, p, r, early)
	}
	res, err := Step(ctx, f, p, r)
	if err == nil {
		early(res)
	}
	return res, err
}

// PopEarly is Frontier.Pop that calls early with the tasks before the
// write is durable when f is Early, and after the write otherwise.
func PopEarly(ctx context.Context, f Frontier, p int, reqs []Issue, early func([]InFlight)) ([]InFlight, error) {
	if e, ok := f.(Early); ok {
		return e.PopEarly(ctx, p, reqs, early)
	}
	tasks, err := f.Pop(ctx, p, reqs)
	if err == nil {
		early(tasks)
	}
	return tasks, err
}

// Step applies, marks and pops in one transaction; see Stepper.
func (b *Bolt) Step(ctx context.Context, p int, r StepRequest) (StepResult, error) {
	return b.StepEarly(ctx, p, r, nil)
}

// StepEarly is Step, calling early (unless nil) with the result before the
// commit is durable; see Early. It is urgent for the group commit only when
// r.Hurry says so, and chained (its transaction lingers for the next) when
// r.Chain does.
func (b *Bolt) StepEarly(ctx context.Context, p int, r StepRequest, early func(StepResult)) (StepResult, error) {
	if err := checkArgs(ctx, p); err != nil {
		return StepResult{}, err
	}
	items, err := encodeQueued(r.Enqueue)
	if err != nil {
		return StepResult{}, err
	}
	// res is guarded: early may read it while fn runs again (a later
	// write of its group failed), which sets it to the same value.
	var (
		mu  sync.Mutex
		res StepResult
	)
	fn := func(tx *bolt.Tx) (err error) {
		var out StepResult
		defer func() {
			mu.Lock()
			res = out
			mu.Unlock()
		}()
		if r.After && appliedSeq(tx, p) != r.Seq-1 {
			return ErrChainBroken
		}
		if out.Applied, err = b.applyTx(tx, p, r.Seq, items, r.Done); err != nil || !out.Applied {
			return err
		}
		if err := markAppliedTx(tx, p, r.Applied, r.Floor); err != nil {
			return err
		}
		if err := promoteTx(tx, p, r.Promote); err != nil {
			return err
		}
		if len(r.Issue) > 0 {
			out.Tasks, err = b.popTx(tx, p, r.Issue)
		}
		return err
	}
	if early != nil {
		err = boltErr(b.writes.updateEarly(fn, func() {
			mu.Lock()
			out := res
			mu.Unlock()
			early(out)
		}, r.Hurry, r.Chain))
	} else {
		err = b.update(fn)
		if err == nil && early != nil {
			early(res)
		}
	}
	if err != nil {
		return StepResult{}, err // rolled back
	}
	return res, nil
}

// PopEarly is Pop, calling early (unless nil) with the tasks before the
// commit is durable; see Early.
func (b *Bolt) PopEarly(ctx context.Context, p int, reqs []Issue, early func([]InFlight)) ([]InFlight, error) {
	if err := checkArgs(ctx, p); err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex // as in StepEarly
		out []InFlight
	)
	fn := func(tx *bolt.Tx) error {
		tasks, err := b.popTx(tx, p, reqs)
		mu.Lock()
		out = tasks
		mu.Unlock()
		return err
	}
	var err error
	if early != nil {
		err = boltErr(b.writes.updateEarly(fn, func() {
			mu.Lock()
			tasks := out
			mu.Unlock()
			early(tasks)
		}, true, false)) // a pop's tasks have not gone out: its caller waits
	} else {
		err = b.update(fn)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
