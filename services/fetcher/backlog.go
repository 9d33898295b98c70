package fetcher

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// backlog holds fetching back while too many fetched pages wait for their
// readers (the parser, and in `run --archive` the WARC writer): a fetcher
// that runs ahead of a CPU-bound parser piles pages up in pages.fetched,
// and once they no longer fit the stream's write cache the NATS server reads
// them back from disk block by block. In the all-in-one mode those blocks
// are this process's memory: RSS grew with the crawl (a 15,000-page backlog
// and 800 MiB at 100,000 pages, docs/benchmarks.md) while fetching ahead
// bought nothing, the parser being the bottleneck.
//
// The count is read from the readers' consumers (not yet delivered plus
// delivered and not yet acked) every backlogPollEvery; between two reads the
// gate adds the tasks it let through since the last read began, so a
// fetcher passes the limit by at most the fetches under way (its workers).
type backlog struct {
	limit int
	read  func(context.Context) (int, error)
	every time.Duration
	log   *slog.Logger
	// keepAlive reports a held task in progress while it waits.
	keepAlive time.Duration

	mu     sync.Mutex
	known  bool          // a first read is done (or failed)
	pages  int           // the last count read
	base   int64         // passed when that read began
	passed int64         // tasks let through, ever
	read1  chan struct{} // closed after the next read

	waits  atomic.Int64 // times a task waited at the gate
	waitNS atomic.Int64 // total time tasks waited there
}

const backlogPollEvery = 100 * time.Millisecond

// backlogWarnAfter is how long fetching stays paused before the fetcher says
// so: a healthy crawl's pauses last a fraction of a second.
const backlogWarnAfter = 30 * time.Second

func newBacklog(limit int, read func(context.Context) (int, error), every, keepAlive time.Duration, log *slog.Logger) *backlog {
	return &backlog{limit: limit, read: read, every: every, keepAlive: keepAlive, log: log, read1: make(chan struct{})}
}

// consumerBacklog counts what the named consumers of stream have yet to ack;
// a consumer that does not exist counts nothing.
func consumerBacklog(js jetstream.JetStream, stream string, consumers ...string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var n int
		for _, name := range consumers {
			c, err := js.Consumer(ctx, stream, name)
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				continue
			}
			if err != nil {
				return 0, err
			}
			info := c.CachedInfo() // js.Consumer just fetched it
			n = max(n, int(info.NumPending)+info.NumAckPending)
		}
		return n, nil
	}
}

// watch reads the count until ctx ends. A count that cannot be read (NATS
// unreachable) opens the gate: fetching on is better than a crawl stalled
// on its own instrument, and the publishes will say what is wrong.
func (b *backlog) watch(ctx context.Context) {
	t := time.NewTicker(b.every)
	defer t.Stop()
	var failing bool
	for {
		b.mu.Lock()
		base := b.passed
		b.mu.Unlock()
		n, err := b.read(ctx)
		if err != nil {
			if !failing && ctx.Err() == nil && b.log != nil {
				b.log.Warn("cannot read the parser's backlog; fetching without its limit until it can", "err", err)
			}
			failing, n = true, 0
		} else {
			failing = false
		}
		b.mu.Lock()
		b.pages, b.base, b.known = n, base, true
		close(b.read1)
		b.read1 = make(chan struct{})
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// state is the count (the last read, plus what passed since it began) and a
// channel closed at the next read. Before the first read the count is the
// limit: the first tasks wait for it (a few milliseconds).
func (b *backlog) state() (int, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.known {
		return b.limit, b.read1
	}
	return b.pages + int(b.passed-b.base), b.read1
}

// lastRead is the count last read from the consumers, for metrics.
func (b *backlog) lastRead() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pages
}

// pass counts a task let through.
func (b *backlog) pass() {
	b.mu.Lock()
	b.passed++
	b.mu.Unlock()
}

// gate passes tasks from in on while the backlog is under its limit; a task
// that comes while it is not waits, reported in progress to JetStream, and
// so does the pull behind it. Tasks held when ctx ends are left unacked.
func (b *backlog) gate(ctx context.Context, in <-chan jetstream.Msg) <-chan jetstream.Msg {
	out := make(chan jetstream.Msg)
	go func() {
		defer close(out)
		for m := range in {
			if !b.wait(ctx, m) {
				continue
			}
			b.pass()
			select {
			case out <- m:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

// wait returns once the backlog is under the limit (true) or ctx ended.
func (b *backlog) wait(ctx context.Context, m jetstream.Msg) bool {
	n, next := b.state()
	if n < b.limit {
		return true
	}
	start := time.Now()
	b.waits.Add(1)
	defer func() { b.waitNS.Add(int64(time.Since(start))) }()
	warned, alive := false, time.Now()
	for n >= b.limit {
		select {
		case <-ctx.Done():
			return false
		case <-next:
		}
		n, next = b.state()
		if b.keepAlive > 0 && time.Since(alive) >= b.keepAlive {
			_ = m.InProgress()
			alive = time.Now()
		}
		if !warned && time.Since(start) >= backlogWarnAfter && b.log != nil {
			warned = true
			b.log.Warn("fetching paused: fetched pages wait to be parsed; is a parser running?",
				"backlog", n, "limit", b.limit, "waiting", time.Since(start).Round(time.Second), "flag", "--fetch-backlog")
		}
	}
	if warned && b.log != nil {
		b.log.Info("fetching resumed", "backlog", n, "paused", time.Since(start).Round(time.Second))
	}
	return true
}
