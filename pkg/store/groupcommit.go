package store

import (
	"fmt"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// groupCommit runs bbolt write transactions in groups, without a timer: the
// first caller starts a transaction at once, and callers that arrive while
// it commits wait and go together in the next one. A lone caller (one
// frontier partition turning a finished fetch into the host's next task)
// waits one commit; under load one commit and its fsync serve everyone who
// queued behind the previous one. bbolt's own Batch waits MaxBatchDelay for
// company first, which put that delay into every step of a host's turnaround.
//
// A function may run more than once (when another function of its group
// fails, the group is rolled back and run again without it), so it must set
// its results afresh, as with bbolt's Batch.
type groupCommit struct {
	db *bolt.DB

	mu      sync.Mutex
	pending []*groupCall // guarded by mu
	leading bool         // a goroutine is running groups; guarded by mu

	commits atomic.Int64 // transactions committed, for the store's metrics
}

type groupCall struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// maxGroup bounds the functions of one transaction.
const maxGroup = 1024

// update runs fn in a write transaction shared with whoever else is waiting.
func (g *groupCommit) update(fn func(*bolt.Tx) error) error {
	c := &groupCall{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if lead {
		g.lead()
	}
	return <-c.done
}

// lead commits one group, then hands the lead to a new goroutine if more
// callers queued meanwhile, so that no caller waits for others' commits
// after its own.
func (g *groupCommit) lead() {
	g.mu.Lock()
	n := min(len(g.pending), maxGroup)
	group := append([]*groupCall(nil), g.pending[:n]...)
	g.pending = append(g.pending[:0], g.pending[n:]...)
	g.mu.Unlock()

	g.run(group)

	g.mu.Lock()
	more := len(g.pending) > 0
	g.leading = more
	g.mu.Unlock()
	if more {
		go g.lead()
	}
}

// run commits group in one transaction. A function that fails rolls the
// transaction back: it gets its error alone and the others run again.
func (g *groupCommit) run(group []*groupCall) {
	for len(group) > 0 {
		failed := -1
		err := g.db.Update(func(tx *bolt.Tx) error {
			for i, c := range group {
				if err := safeCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			group[failed].done <- err
			group = append(group[:failed:failed], group[failed+1:]...)
			continue
		}
		if err == nil {
			g.commits.Add(1)
		}
		for _, c := range group {
			c.done <- err
		}
		return
	}
}

// safeCall turns a panic in fn into an error for its caller alone, instead
// of killing the goroutine that leads the group (whoever that is).
func safeCall(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: panic in a write transaction: %v", r)
		}
	}()
	return fn(tx)
}
