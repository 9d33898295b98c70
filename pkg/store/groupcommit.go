package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// groupCommit runs bbolt write transactions in groups: the first caller
// starts a transaction at once (unless the groups are paced, below), and
// callers that arrive while it commits wait and go together in the next one. A lone caller (one
// frontier partition turning a finished fetch into the host's next task)
// waits one commit; under load one commit and its fsync serve everyone who
// queued behind the previous one. bbolt's own Batch waits MaxBatchDelay for
// company first, which put that delay into every step of a host's turnaround.
//
// Under load the groups are paced: a commit starts no sooner than interval
// after the previous one started, so the writes of that interval share one
// transaction. Each commit costs bbolt two fdatasyncs (its pages, then its
// meta page), and the writes of the all-in-one mode come one at a time
// (each frontier partition's step batches its messages), so unpaced groups
// hold one or two writes: about a commit for every ten pages fetched.
//
// Pacing pays only when several callers write independently: a caller has
// one write pending at a time, so a group's size is the number of callers
// that wrote within it. A chain of dependent writes (one host crawled
// without a delay: a partition's step waits for its previous one) gains
// nothing and would wait interval on every link. So pacing is tried, and
// kept while it gathers: a paced group of at least paceFrom writes keeps
// the pacing; smallGroups such groups in a row end it, and a new trial (one
// paced group) comes probeEvery later, twice as late after each trial that
// failed, up to maxProbeEvery. A chain pays one interval per maxProbeEvery.
// An unpaced group of paceFrom writes or more (writers queued behind the
// previous commit, which a chain never does) calls a trial at once.
// A group also starts at once when maxGroup writes wait, or the store
// closes.
//
// A function may run more than once (when another function of its group
// fails, the group is rolled back and run again without it), so it must set
// its results afresh, as with bbolt's Batch.
//
// An early write (updateEarly) is told as soon as its own function has run
// in the group's transaction, while the functions after it run and the group
// commits: its results are then final unless the commit itself fails. (If a
// later function fails, the group is rolled back and run again without it;
// the early function, run again on the same state, gives the same results:
// every writer of the store keeps to its own keys — a frontier partition to
// its partition's, of which it has one write pending at a time.) A frontier
// partition issues a host's next task on it, so the host's turnaround holds
// neither the rest of its group's writes nor an fsync; see docs/frontier.md
// for why that is crash-safe. An urgent write (a task that has not gone out
// yet waits for it) also ends a pacing wait at once, as does hurry (a done
// report waits for the write that records its task); the rest wait for
// company, so that a crawl whose tasks leave from reservations commits once
// per interval, not once per page.
//
// A chained write (updateEarly with chain set: a frontier partition whose
// host, crawled without a delay, will send the step recording its next task
// within a turnaround) keeps its group's transaction open after the group's
// functions have run: a write that arrives within lingerGap runs in it at
// once, and so on, until none comes, interval has passed since the
// transaction began, maxGroup writes are in it, a write whose caller waits
// for the commit and cannot wait (urgent, not chained) joins it, or the
// store closes. (hurry does not end it: what a partition hurries for waits
// for a function to run, which it does at once in an open transaction.) One host crawled without a delay then costs a
// commit for every few pages instead of one per page, and its steps no
// longer wait for each other's commit (docs/frontier.md, "Steps chained in
// one transaction").
type groupCommit struct {
	db       *bolt.DB
	flush    func(*bolt.Tx) error // ends every group's transaction (the page budget), if set
	interval time.Duration        // least time between commit starts while paced (<= 0: never paced)
	gap      time.Duration        // lingerGap; a field for tests, guarded by mu
	paceFrom int                  // a group this large paces the next one

	mu      sync.Mutex
	pending []*groupCall  // guarded by mu
	leading bool          // a goroutine is running groups; guarded by mu
	closed  bool          // guarded by mu
	idle    sync.Cond     // signalled when leading turns false; L is &mu
	full    chan struct{} // a token when pending reaches maxGroup
	urgent  chan struct{} // a token when an early write is pending
	closing chan struct{} // closed by close
	// arrived is closed by enqueue when a write arrives while the leader
	// lingers in an open transaction; guarded by mu.
	arrived chan struct{}

	// The leader's: handed from one leader to the next under mu.
	last     time.Time     // when the previous commit started
	paced    bool          // pacing gathers
	small    int           // paced groups in a row below paceFrom
	probeAt  time.Time     // when pacing is tried again, unless paced
	probeGap time.Duration // from a failed trial to the next

	commits atomic.Int64 // transactions committed, for the store's metrics
	writes  atomic.Int64 // writes committed
}

func newGroupCommit(db *bolt.DB, interval time.Duration, paceFrom int) *groupCommit {
	g := &groupCommit{db: db, interval: interval, gap: lingerGap, paceFrom: max(paceFrom, 2), probeGap: probeEvery,
		full: make(chan struct{}, 1), urgent: make(chan struct{}, 1), closing: make(chan struct{})}
	g.idle.L = &g.mu
	return g
}

type groupCall struct {
	fn     func(*bolt.Tx) error
	done   chan error
	ran    chan struct{} // early writes: closed once fn ran in the group's transaction
	told   bool          // ran is closed; the leader's
	urgent bool          // ends a pacing wait; guarded by mu
	chain  bool          // its caller does not wait for the commit and writes again soon: linger
}

// maxGroup bounds the functions of one transaction.
const maxGroup = 1024

// Pacing trials; see groupCommit.
const (
	smallGroups   = 3
	probeEvery    = time.Second
	maxProbeEvery = 8 * time.Second
)

// lingerGap is how long an open transaction waits for a chained write's
// successor: a host's turnaround and the partition's step, with room for a
// busy machine.
const lingerGap = 5 * time.Millisecond

// update runs fn in a write transaction shared with whoever else is waiting;
// an urgent one ends a pacing wait (its caller has nothing else to do
// meanwhile: a partition loading, an issue waiting for its page budget).
func (g *groupCommit) update(fn func(*bolt.Tx) error, urgent bool) error {
	c := &groupCall{fn: fn, done: make(chan error, 1), urgent: urgent}
	if g.enqueue(c) {
		g.lead()
	}
	return <-c.done
}

// updateEarly is update for a write whose caller acts on its results before
// they are durable: once fn has run in its group's transaction, ran is
// called, on the caller's goroutine, while the rest of the group runs and
// commits; then updateEarly returns the commit's outcome as update does.
// fn's results are final when ran is called unless the commit fails, and
// then updateEarly returns the error. fn may run again after ran (a later
// function of its group failed): it must give the same results from the
// same state, and must not write what ran reads unguarded. An urgent write
// does not wait for pacing; one that is not waits like any other until
// hurry says its caller needs it.
//
// A chained write (chain) lingers: its group's transaction stays open for
// the caller's next write (see groupCommit).
func (g *groupCommit) updateEarly(fn func(*bolt.Tx) error, ran func(), urgent, chain bool) error {
	c := &groupCall{fn: fn, done: make(chan error, 1), ran: make(chan struct{}), urgent: urgent, chain: chain}
	if g.enqueue(c) {
		go g.lead() // this goroutine is to act on the results meanwhile
	}
	select {
	case <-c.ran:
		ran()
	case err := <-c.done: // failed before the commit (or closed)
		return err
	}
	return <-c.done
}

// enqueue adds c to the pending group and reports whether the caller is to
// lead.
func (g *groupCommit) enqueue(c *groupCall) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.done <- ErrClosed
		return false
	}
	g.pending = append(g.pending, c)
	if len(g.pending) == maxGroup {
		select {
		case g.full <- struct{}{}:
		default:
		}
	}
	if c.urgent {
		g.signalUrgent()
	}
	if g.arrived != nil {
		close(g.arrived) // the leader lingers in an open transaction: run it there
		g.arrived = nil
	}
	lead := !g.leading
	g.leading = true
	return lead
}

// hurry makes the writes waiting now urgent: a caller needs their commit
// (a frontier partition holds a done report whose host is due before the
// pacing would end). When none waits, the next group does not wait for
// company: the write hurried for may not have arrived yet (a partition's
// step is written from a goroutine of its own, and links that came just
// after it hurried nothing: the seed's host waited out the pacing at the
// start of a crawl).
func (g *groupCommit) hurry() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.pending {
		c.urgent = true
	}
	g.signalUrgent()
}

// signalUrgent ends a pacing wait; mu held.
func (g *groupCommit) signalUrgent() {
	select {
	case g.urgent <- struct{}{}:
	default:
	}
}

// close refuses new writes, commits the waiting ones at once and returns
// when the last group is done.
func (g *groupCommit) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		close(g.closing)
	}
	if g.arrived != nil {
		close(g.arrived)
		g.arrived = nil
	}
	for g.leading {
		g.idle.Wait()
	}
}

func (g *groupCommit) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// pace waits, while pacing (or trying it), until interval after the
// previous commit started; a full group, an urgent write or close ends the
// wait. It reports whether it waited the whole interval: only then does the
// group tell whether pacing gathers (a wait cut short by an urgent write
// says nothing about how many would have come).
func (g *groupCommit) pace() bool {
	if g.interval <= 0 || !g.paced && time.Now().Before(g.probeAt) {
		return false
	}
	d := time.Until(g.last.Add(g.interval))
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.full:
		return true
	case <-g.urgent:
	case <-g.closing:
	}
	return false
}

// learn learns from a paced group of n writes whether pacing gathers.
func (g *groupCommit) learn(n int) {
	switch {
	case n >= g.paceFrom:
		g.paced, g.small, g.probeGap = true, 0, probeEvery
	case !g.paced: // a failed trial
		g.probeAt = time.Now().Add(g.probeGap)
		g.probeGap = min(2*g.probeGap, maxProbeEvery)
	default:
		if g.small++; g.small >= smallGroups {
			g.paced, g.small = false, 0
			g.probeAt = time.Now().Add(g.probeGap)
		}
	}
}

// lead commits one group, then hands the lead to a new goroutine if more
// callers queued meanwhile, so that no caller waits for others' commits
// after its own.
func (g *groupCommit) lead() {
	paced := g.pace()
	g.mu.Lock()
	n := min(len(g.pending), maxGroup)
	group := append([]*groupCall(nil), g.pending[:n]...)
	g.pending = append(g.pending[:0], g.pending[n:]...)
	if !hasUrgent(g.pending) {
		select { // the urgent writes that set it are in this group
		case <-g.urgent:
		default:
		}
	}
	g.mu.Unlock()

	g.last = time.Now()
	switch {
	case paced:
		g.learn(len(group))
	case !g.paced && len(group) >= g.paceFrom:
		// Writers queued up behind an unpaced commit: they write
		// independently, so the next group is a trial now, not after
		// the back-off of earlier failed trials (the start of a crawl,
		// one host found so far, fails them all).
		g.probeAt, g.probeGap = time.Time{}, probeEvery
	}
	g.run(group)

	g.mu.Lock()
	more := len(g.pending) > 0
	g.leading = more
	if !more {
		g.idle.Broadcast()
	}
	g.mu.Unlock()
	if more {
		go g.lead()
	}
}

func hasUrgent(calls []*groupCall) bool {
	for _, c := range calls {
		if c.urgent {
			return true
		}
	}
	return false
}

// run commits group in one transaction. A function that fails rolls the
// transaction back: it gets its error alone and the others run again. An
// early write hears that its function ran as soon as it did. A chained write
// keeps the transaction open for the writes that follow it (linger); a
// group run again after a failure is run as it stands, without lingering.
func (g *groupCommit) run(group []*groupCall) {
	g.mu.Lock()
	linger := g.interval > 0 && !mustCommit(group)
	g.mu.Unlock()
	for len(group) > 0 {
		failed := -1
		err := g.db.Update(func(tx *bolt.Tx) error {
			began := time.Now()
			chain := false
			for i := 0; ; i++ {
				if i == len(group) {
					if !linger || !chain {
						break
					}
					more, last := g.await(began, maxGroup-len(group))
					group = append(group, more...)
					if last {
						linger = false
					}
					if len(more) == 0 {
						break
					}
				}
				c := group[i]
				if err := safeCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
				if c.ran != nil && !c.told {
					c.told = true
					close(c.ran)
				}
				if c.ran != nil {
					chain = c.chain // the partition's latest word on its next write
				}
			}
			if g.flush != nil {
				return g.flush(tx)
			}
			return nil
		})
		if failed >= 0 {
			group[failed].done <- err
			group = append(group[:failed:failed], group[failed+1:]...)
			linger = false
			continue
		}
		if err == nil {
			g.commits.Add(1)
			g.writes.Add(int64(len(group)))
		}
		for _, c := range group {
			c.done <- err
		}
		return
	}
}

// await waits, in an open transaction begun at began, for up to room more
// writes: until some are pending (it takes them), lingerGap passes without
// one, interval has passed since began, or the store closes (none then).
// last reports that the transaction is to commit after the writes taken: one
// of them must not wait (mustCommit).
func (g *groupCommit) await(began time.Time, room int) (more []*groupCall, last bool) {
	if room <= 0 {
		return nil, true
	}
	g.mu.Lock()
	end := time.Now().Add(g.gap)
	g.mu.Unlock()
	if e := began.Add(g.interval); e.Before(end) {
		end = e
	}
	for {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			return nil, true
		}
		if len(g.pending) > 0 {
			n := min(len(g.pending), room)
			more = append(more, g.pending[:n]...)
			g.pending = append(g.pending[:0], g.pending[n:]...)
			last = mustCommit(more)
			g.mu.Unlock()
			return more, last
		}
		d := time.Until(end)
		if d <= 0 {
			g.mu.Unlock()
			return nil, true
		}
		arrived := make(chan struct{})
		g.arrived = arrived
		g.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-arrived:
			t.Stop()
		case <-t.C:
			g.mu.Lock()
			if g.arrived == arrived {
				g.arrived = nil
			}
			g.mu.Unlock()
		}
	}
}

// mustCommit reports whether a write of calls has a caller that waits for
// the commit with nothing else to do (urgent and not chained: a partition
// loading, a pop the loop waits for); mu held.
func mustCommit(calls []*groupCall) bool {
	for _, c := range calls {
		if c.urgent && !c.chain {
			return true
		}
	}
	return false
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
