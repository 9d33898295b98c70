package store

import (
	"context"

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
}

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

// Step applies, marks and pops in one transaction; see Stepper.
func (b *Bolt) Step(ctx context.Context, p int, r StepRequest) (StepResult, error) {
	if err := checkArgs(ctx, p); err != nil {
		return StepResult{}, err
	}
	items, err := encodeQueued(r.Enqueue)
	if err != nil {
		return StepResult{}, err
	}
	var res StepResult
	err = b.update(func(tx *bolt.Tx) (err error) {
		res = StepResult{}
		if res.Applied, err = b.applyTx(tx, p, r.Seq, items, r.Done); err != nil || !res.Applied {
			return err
		}
		if err := markAppliedTx(tx, p, r.Applied, r.Floor); err != nil {
			return err
		}
		if len(r.Issue) > 0 {
			res.Tasks, err = b.popTx(tx, p, r.Issue)
		}
		return err
	})
	if err != nil {
		return StepResult{}, err // rolled back
	}
	return res, nil
}
