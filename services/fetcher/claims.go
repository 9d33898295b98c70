package fetcher

import "sync"

// claims keeps one replica from working on a task twice. JetStream
// redelivers a task whose ack wait ran out while it still waited in this
// replica's buffers or was being fetched (a starved process, a long stall
// publishing); without this the redelivery would fetch the URL a second
// time, right after the first, breaking both "fetched once" and the host's
// gap. Tasks in progress and the last doneSize finished ones are known.
type claims struct {
	mu       sync.Mutex
	running  map[string]bool
	done     map[string]bool
	order    []string // finished IDs, oldest first, for eviction
	doneSize int
}

func newClaims(doneSize int) *claims {
	return &claims{running: map[string]bool{}, done: map[string]bool{}, doneSize: doneSize}
}

// claim reports whether the caller may work on task id now; if not, done
// tells whether it was finished already (its delivery may be acked) rather
// than running in another worker (leave the delivery alone: that worker
// acks the message).
func (c *claims) claim(id string) (ok, done bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.done[id]:
		return false, true
	case c.running[id]:
		return false, false
	}
	c.running[id] = true
	return true, false
}

// finish ends a claim; finished records the task as done (published and
// acked), otherwise it may be claimed again (it was handed back).
func (c *claims) finish(id string, finished bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, id)
	if !finished || c.done[id] {
		return
	}
	c.done[id] = true
	c.order = append(c.order, id)
	if len(c.order) > c.doneSize {
		delete(c.done, c.order[0])
		c.order = c.order[1:]
	}
}
