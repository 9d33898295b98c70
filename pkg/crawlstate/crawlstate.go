// Package crawlstate takes snapshots of a crawl from what every deployment
// has in common (the JetStream streams and the frontier's store), to show
// progress and to decide that a crawl is over.
//
// A crawl is over when every work stream is empty, nothing is in flight, the
// host queues are empty (or the page budget is spent), and nothing moved
// between two such snapshots. The last condition matters: snapshots read
// streams one by one, and work could slip from an unread place into a read one.
// Every move of work publishes a message (a stream's last sequence grows) or
// queues a URL (the store's enqueued counter grows), so two idle snapshots
// with the same counters mean nothing was in transit. (A work stream's block
// keeper, published once after the stream goes quiet, is not work: a keeper
// alone between the two does not count as a move.) The confirmation rests on
// the counters, not on the time between the two snapshots.
package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// StreamState is one stream's backlog and position.
type StreamState struct {
	Msgs    uint64 // messages not yet acked by their consumer
	LastSeq uint64 // grows with every message ever published
	// KeeperSeq is, in a work stream that holds no work but a block keeper
	// (bus.KeepBlock), the sequence of its newest keeper; 0 otherwise.
	KeeperSeq uint64
}

// still reports whether no work was published to the stream between a and
// b: its last sequence is the same, or the one message published since is
// a block keeper (published once after the stream went quiet; not work).
func (a StreamState) still(b StreamState) bool {
	return a.LastSeq == b.LastSeq || b.LastSeq == a.LastSeq+1 && b.KeeperSeq == b.LastSeq
}

// Snapshot is the crawl at one moment.
type Snapshot struct {
	At            time.Time
	Discovered    StreamState
	Frontier      StreamState
	Fetch         StreamState
	Pages         StreamState
	Parsed        StreamState
	ParserBacklog uint64 // pages the parser has not acked (taps excluded)
	DeadLetters   uint64
	Store         store.Stats
	MaxPages      int
	// IgnoreSchedule: revisits scheduled do not keep the crawl going (a
	// run that does not revisit, on a data dir a continuous crawl left).
	IgnoreSchedule bool
}

// Watcher reads snapshots.
type Watcher struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	Store      store.Frontier
	Partitions []int // all partitions of the crawl
	MaxPages   int
	// IgnoreSchedule: see Snapshot.IgnoreSchedule.
	IgnoreSchedule bool
	// Wake, when set, tells Wait that work may have just ended somewhere
	// (the services of `trawler run` signal it after each step and
	// batch): Wait then asks the store, which is cheap, and when it holds
	// nothing queued or in flight looks at once instead of at its next
	// interval. Without it the end is seen up to a tail interval late.
	Wake <-chan struct{}

	mu             sync.Mutex
	streams        map[string]jetstream.Stream // by name; see stream
	parserConsumer jetstream.Consumer          // see parser
}

// Snapshot reads the streams first (at once), then the parser's consumer,
// then the store.
func (w *Watcher) Snapshot(ctx context.Context) (Snapshot, error) {
	s := Snapshot{At: time.Now(), MaxPages: w.MaxPages, IgnoreSchedule: w.IgnoreSchedule}
	reads := []struct {
		name string
		into *StreamState
		work bool // a work stream: its block keeper is not work
	}{
		{w.Names.StreamDiscovered(), &s.Discovered, true},
		{w.Names.StreamFrontier(), &s.Frontier, true},
		{w.Names.StreamFetch(), &s.Fetch, true},
		{w.Names.StreamPages(), &s.Pages, false},
		{w.Names.StreamParsed(), &s.Parsed, false},
	}
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, r := range reads {
		wg.Go(func() {
			if err := w.readStream(ctx, r.name, r.into, r.work); err != nil {
				errs[i] = fmt.Errorf("stream %s: %w", r.name, err)
			}
		})
	}
	wg.Go(func() {
		if st, err := w.stream(ctx, w.Names.StreamDLQ()); err == nil {
			if info, err := st.Info(ctx); err == nil {
				s.DeadLetters = info.State.Msgs
			}
		}
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return s, err
	}
	pc, err := w.parser(ctx)
	if err != nil {
		return s, fmt.Errorf("parser consumer: %w", err)
	}
	ci, err := pc.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("parser consumer: %w", err)
	}
	// The pages stream was read above, before this: its last page counts
	// even when the consumer has not heard of it yet (bus.Backlog).
	s.ParserBacklog = bus.BacklogOf(ci, s.Pages.Msgs, s.Pages.LastSeq)
	if s.Store, err = w.Store.Stats(ctx, w.Partitions); err != nil {
		return s, fmt.Errorf("frontier store: %w", err)
	}
	return s, nil
}

// readStream reads stream name's backlog and position into into.
func (w *Watcher) readStream(ctx context.Context, name string, into *StreamState, work bool) error {
	stream, err := w.stream(ctx, name)
	if err != nil {
		return err
	}
	var info *jetstream.StreamInfo
	msgs := uint64(0)
	if work {
		info, msgs, err = bus.WorkMsgs(ctx, stream, w.Names.Keeper(name))
	} else if info, err = stream.Info(ctx); err == nil {
		msgs = info.State.Msgs
	}
	if err != nil {
		return err
	}
	*into = StreamState{Msgs: msgs, LastSeq: info.State.LastSeq}
	if work && msgs == 0 && info.State.Msgs > 0 {
		// Only keepers left: which one is newest tells whether the
		// last message published was one (StreamState.still).
		m, err := stream.GetLastMsgForSubject(ctx, w.Names.Keeper(name))
		if err == nil {
			into.KeeperSeq = m.Sequence
		} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
			return err
		}
	}
	return nil
}

// stream is the handle of stream name, looked up once: each snapshot then
// asks for the stream's state alone, one request instead of two.
func (w *Watcher) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	w.mu.Lock()
	st := w.streams[name]
	w.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := w.JS.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if w.streams == nil {
		w.streams = map[string]jetstream.Stream{}
	}
	w.streams[name] = st
	w.mu.Unlock()
	return st, nil
}

// parser is the handle of the parser's consumer on the pages stream, looked
// up once.
func (w *Watcher) parser(ctx context.Context) (jetstream.Consumer, error) {
	w.mu.Lock()
	pc := w.parserConsumer
	w.mu.Unlock()
	if pc != nil {
		return pc, nil
	}
	pc, err := w.JS.Consumer(ctx, w.Names.StreamPages(), w.Names.ConsumerParser())
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.parserConsumer = pc
	w.mu.Unlock()
	return pc, nil
}

// PagesTotal is how many pages the crawl has fetched (and recorded), over
// all its runs: the pages stream's count, or the parsed stream's where the
// fetcher hands pages to the parser in process (`run` without a NATS
// listener; only the frontier's records of URLs given up go through the
// pages stream there). Each page yields one parsed document, on the parsed
// stream or, where nothing could read it there, counted by the store
// (store.Stats.ParsedInProcess).
func (s Snapshot) PagesTotal() uint64 {
	return max(s.Pages.LastSeq, s.Parsed.LastSeq+s.Store.ParsedInProcess)
}

// BudgetSpent reports whether --max-pages fetches have been issued.
func (s Snapshot) BudgetSpent() bool {
	return s.MaxPages > 0 && s.Store.Issued >= uint64(s.MaxPages)
}

// Idle reports whether nothing is queued, scheduled for a revisit or in
// flight anywhere: a continuous crawl is never idle until its budget is spent.
func (s Snapshot) Idle() bool {
	return s.Discovered.Msgs == 0 && s.Frontier.Msgs == 0 && s.Fetch.Msgs == 0 &&
		s.ParserBacklog == 0 && s.storeIdle()
}

// storeIdle is the store's part of Idle.
func (s Snapshot) storeIdle() bool {
	return s.Store.InFlight == 0 &&
		((s.Store.Queued == 0 && (s.Store.Scheduled == 0 || s.IgnoreSchedule)) || s.BudgetSpent())
}

// Waiting says what keeps the crawl from being idle, for a user watching a
// crawl that has stopped moving: each place that still holds work, with its
// count ("" when the crawl is idle).
func (s Snapshot) Waiting() string {
	var parts []string
	add := func(n int64, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(int64(s.Store.InFlight), "tasks in flight (a task lost in a crash comes back when its lease ends)")
	add(int64(s.Fetch.Msgs), "tasks in the fetch stream")
	add(int64(s.Discovered.Msgs), "links in the discovered stream")
	add(int64(s.Frontier.Msgs), "messages in the frontier stream")
	add(int64(s.ParserBacklog), "pages for the parser")
	if !s.BudgetSpent() {
		add(s.Store.Queued, "URLs queued at their hosts")
		if !s.IgnoreSchedule {
			add(s.Store.Scheduled, "revisits scheduled")
		}
	}
	return strings.Join(parts, ", ")
}

// Still reports whether no work moved between s and later.
func (s Snapshot) Still(later Snapshot) bool {
	return s.Discovered.still(later.Discovered) && s.Frontier.still(later.Frontier) &&
		s.Fetch.still(later.Fetch) && s.Pages.LastSeq == later.Pages.LastSeq &&
		s.Parsed.LastSeq == later.Parsed.LastSeq && s.Store.ParsedInProcess == later.Store.ParsedInProcess &&
		s.Store.Enqueued == later.Store.Enqueued && s.Store.Issued == later.Store.Issued
}

// Finished reports whether the crawl is over given two snapshots, prev taken
// before s.
func Finished(prev, s Snapshot) bool { return prev.Idle() && s.Idle() && prev.Still(s) }

// Queued is the work waiting anywhere before a fetch.
func (s Snapshot) Queued() uint64 {
	return uint64(max(s.Store.Queued, 0)) + s.Discovered.Msgs + s.Frontier.Msgs
}

// Wait polls until the crawl is finished or ctx ends, calling each (if not
// nil) with every snapshot. It looks every `every`, and sooner near the
// end (NextLook). The snapshot that confirms an idle one comes
// confirmAfter later: the confirmation rests on the streams' sequences, not
// on time, so the crawl's end costs little more than two snapshots.
func (w *Watcher) Wait(ctx context.Context, every time.Duration, each func(Snapshot)) (Snapshot, error) {
	var prev *Snapshot
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		// Each look has its own deadline: a request a NATS cluster never
		// answers (a stream leader moving) must not stall the wait.
		sctx, cancel := context.WithTimeout(ctx, max(10*every, 10*time.Second))
		s, err := w.Snapshot(sctx)
		cancel()
		next := every
		if err == nil {
			if each != nil {
				each(s)
			}
			if prev != nil && Finished(*prev, s) {
				return s, nil
			}
			next = NextLook(prev, s, every)
			prev = &s
		} else if ctx.Err() != nil {
			return s, ctx.Err()
		}
		t.Reset(next)
		if !w.until(ctx, t) {
			return s, ctx.Err()
		}
	}
}

// until waits for t, or for a Wake after which the store holds nothing
// queued or in flight; false when ctx ended. The store is asked at most
// once every wakeGap: a large crawl signals Wake hundreds of times a
// second, and a signal that comes meanwhile is kept for the next ask.
func (w *Watcher) until(ctx context.Context, t *time.Timer) bool {
	wake := w.Wake
	var rest <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-wake:
			if w.storeIdle(ctx) {
				return true
			}
			wake, rest = nil, time.After(wakeGap)
		case <-rest:
			wake, rest = w.Wake, nil
		}
	}
}

// storeIdle reads the store alone (Snapshot.storeIdle).
func (w *Watcher) storeIdle(ctx context.Context) bool {
	st, err := w.Store.Stats(ctx, w.Partitions)
	return err == nil && Snapshot{Store: st, MaxPages: w.MaxPages, IgnoreSchedule: w.IgnoreSchedule}.storeIdle()
}

// wakeGap is the least time between two of until's looks at the store.
const wakeGap = 2 * time.Millisecond

// NextLook is how long Wait waits after snapshot s (prev: the one before,
// nil at the first look) when it looks every `every`: confirmAfter after an
// idle one; near the end (at most nearEndMost left), halfway to when the
// work left would be done at the pace since prev (at least tailEvery
// later), so that the end is seen soon after it comes, not up to an
// interval later (~60 ms of a one-host crawl of 600 pages). Halfway: what
// is left counts messages (a frontier message may hold many links) as well
// as pages, so the estimate runs long. The first look
// compares with nothing: a crawl of a few pages may be over before a second
// one, and a whole interval would then be most of its run.
func NextLook(prev *Snapshot, s Snapshot, every time.Duration) time.Duration {
	switch {
	case s.Idle() && (prev == nil || !prev.Idle()):
		return min(every, confirmAfter)
	case s.Idle():
		// Idle twice but something moved between: a trickle, not a
		// confirmation to come at once.
		return min(every, tailEvery)
	case prev == nil:
		if s.left() <= nearEndFirst {
			return min(every, tailEvery)
		}
		return every
	}
	left := s.left()
	fetched := s.PagesTotal() - min(s.PagesTotal(), prev.PagesTotal())
	dt := s.At.Sub(prev.At)
	if left > nearEndMost || fetched == 0 || dt <= 0 {
		if NearEnd(*prev, s) {
			return min(every, tailEvery)
		}
		return every
	}
	eta := time.Duration(float64(dt) * float64(left) / float64(fetched))
	return min(every, max(eta/2, tailEvery))
}

// nearEndFirst is NearEnd at the first look, which has no pace to compare
// with: a crawl with this little work left (its seeds, a task or two) may
// be over within one interval.
const nearEndFirst = 64

// How soon Wait looks again after an idle snapshot, and near the end.
const (
	confirmAfter = time.Millisecond
	tailEvery    = 10 * time.Millisecond
)

// NearEnd reports whether the work left at s could be done before the
// next look: no more than twice the pages fetched since prev, and little
// in all. A crawl's end (or a trickle) is then looked for more often.
func NearEnd(prev, s Snapshot) bool {
	left := s.left()
	fetched := s.PagesTotal() - min(s.PagesTotal(), prev.PagesTotal())
	return left <= nearEndMost && left <= 2*max(fetched, 1)
}

// left is the work not yet done anywhere: queued, in flight, in the work
// streams or for the parser.
func (s Snapshot) left() uint64 {
	return uint64(max(s.Store.Queued, 0)+max(s.Store.InFlight, 0)) + s.Discovered.Msgs + s.Frontier.Msgs + s.Fetch.Msgs + s.ParserBacklog
}

// nearEndMost bounds NearEnd: a large crawl looks often only at its end.
const nearEndMost = 1000
