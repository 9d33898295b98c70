package ownership

import (
	"context"
	"sync"
	"time"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// Joiner opens this replica's Member with h as its handler.
type Joiner func(h Handler) (*Member, error)

// Serve runs fn for every partition this replica owns until ctx ends: the
// static list when join is nil, else whatever the Member assigns, starting
// and stopping partitions as replicas come and go. fn must return soon
// after its context ends, having finished (or left to redelivery) the work
// in hand. When fn fails (a NATS request unanswered while a stream leader
// moves, say) the partition is told to report and started again after a
// backoff: one partition's trouble never stops the replica's others.
func Serve(ctx context.Context, static []int, join Joiner, fn func(ctx context.Context, p int) error, report func(p int, err error, retryIn time.Duration)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &group{base: ctx, fn: fn, report: report, parts: map[int]*part{}}
	defer g.stopAll()
	if join == nil {
		for _, p := range static {
			g.Start(p)
		}
		<-ctx.Done()
		return nil
	}
	m, err := join(g)
	if err != nil {
		return err
	}
	_ = m.Run(ctx) // ends with ctx, having released the member's partitions
	return nil
}

// group is a Handler running fn in one goroutine per started partition.
type group struct {
	base   context.Context
	fn     func(ctx context.Context, p int) error
	report func(p int, err error, retryIn time.Duration)
	mu     sync.Mutex
	parts  map[int]*part // guarded by mu
}

type part struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (g *group) Start(p int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.parts[p] != nil {
		return
	}
	ctx, cancel := context.WithCancel(g.base)
	pt := &part{cancel: cancel, done: make(chan struct{})}
	g.parts[p] = pt
	go func() {
		defer close(pt.done)
		for n := 1; ; n++ {
			err := g.fn(ctx, p)
			if err == nil || ctx.Err() != nil {
				return
			}
			wait := bus.Backoff(n + 3) // 800ms doubling to 10s
			if g.report != nil {
				g.report(p, err, wait)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
}

// Stop cancels partition p and waits until its fn returned.
func (g *group) Stop(p int) {
	g.mu.Lock()
	pt := g.parts[p]
	delete(g.parts, p)
	g.mu.Unlock()
	if pt != nil {
		pt.cancel()
		<-pt.done
	}
}

func (g *group) stopAll() {
	g.mu.Lock()
	var ps []int
	for p := range g.parts {
		ps = append(ps, p)
	}
	g.mu.Unlock()
	for _, p := range ps {
		g.Stop(p)
	}
}
