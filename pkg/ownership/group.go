package ownership

import (
	"context"
	"sync"
)

// Joiner opens this replica's Member with h as its handler.
type Joiner func(h Handler) (*Member, error)

// Serve runs fn for every partition this replica owns until ctx ends: the
// static list when join is nil, else whatever the Member assigns, starting
// and stopping partitions as replicas come and go. fn must return soon
// after its context ends, having finished (or left to redelivery) the work
// in hand. The first error of fn (not caused by a stop) ends Serve.
func Serve(ctx context.Context, static []int, join Joiner, fn func(ctx context.Context, p int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &group{base: ctx, fn: fn, parts: map[int]*part{}, errs: make(chan error, 1)}
	defer g.stopAll()
	if join == nil {
		for _, p := range static {
			g.Start(p)
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-g.errs:
			return err
		}
	}
	m, err := join(g)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	select {
	case <-ctx.Done():
		<-done // the member stops and releases its partitions
		return nil
	case err := <-g.errs:
		cancel()
		<-done
		return err
	}
}

// group is a Handler running fn in one goroutine per started partition.
type group struct {
	base  context.Context
	fn    func(ctx context.Context, p int) error
	mu    sync.Mutex
	parts map[int]*part // guarded by mu
	errs  chan error
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
		if err := g.fn(ctx, p); err != nil && ctx.Err() == nil {
			select {
			case g.errs <- err:
			default:
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
