package resolver

// Flights: one network lookup per name, shared by the callers asking for it
// meanwhile, cancelled when the last of them gives up; its A and AAAA
// answers merged into one cache entry and its lifetime.

import (
	"context"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// flight is one network lookup of a name, shared by all callers asking for
// it meanwhile: a hand-written singleflight.
type flight struct {
	done    chan struct{} // closed once res is set
	res     entry         // written by the flight before done is closed; read-only after
	waiters int           // callers waiting; guarded by Resolver.mu
	cancel  context.CancelFunc
}

// startFlight registers a lookup of key and starts it. The caller holds r.mu.
func (r *Resolver) startFlight(key string) *flight {
	ctx, cancel := context.WithCancel(context.Background())
	f := &flight{done: make(chan struct{}), cancel: cancel}
	r.flights[key] = f
	go r.fly(ctx, key, f)
	return f
}

// fly runs a flight: resolve without any lock, then, under r.mu, cache the
// result and retire the flight in one step.
func (r *Resolver) fly(ctx context.Context, key string, f *flight) {
	defer f.cancel()
	res, keep := r.resolve(ctx, key)
	r.mu.Lock()
	if r.flights[key] == f { // an abandoned flight may have been replaced
		delete(r.flights, key)
	}
	if keep {
		r.cache.put(key, res)
	}
	r.mu.Unlock()
	f.res = res
	close(f.done)
}

// wait blocks until f is done or ctx ends. The last caller to give up
// cancels the flight, so that abandoned lookups free their sockets.
func (r *Resolver) wait(ctx context.Context, host, key string, f *flight) ([]netip.Addr, error) {
	select {
	case <-f.done:
		return r.flightResult(host, f)
	case <-ctx.Done():
	}
	select {
	case <-f.done: // both ready: the answer is worth more than the error
		return r.flightResult(host, f)
	default:
	}
	r.mu.Lock()
	f.waiters--
	last := f.waiters == 0
	if last && r.flights[key] == f {
		delete(r.flights, key) // the next caller starts afresh
	}
	r.mu.Unlock()
	if last {
		f.cancel()
	}
	r.stats.errors.Add(1)
	return nil, ctxError(host, ctx.Err())
}

func (r *Resolver) flightResult(host string, f *flight) ([]netip.Addr, error) {
	if f.res.fail != nil {
		r.stats.errors.Add(1)
		return nil, f.res.fail.forHost(host)
	}
	return slices.Clone(f.res.addrs), nil
}

// resolve looks key up on the network: A and AAAA in parallel. keep is false
// when the result must not be cached (abandoned, or a zero lifetime).
func (r *Resolver) resolve(ctx context.Context, key string) (e entry, keep bool) {
	abandoned := entry{fail: &failure{err: context.Canceled}}
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		return abandoned, false
	}
	r.stats.inFlight.Add(1)
	defer r.stats.inFlight.Add(-1)

	start := time.Now()
	name := dns.Fqdn(key)
	var v6 answer
	done := make(chan struct{})
	go func() {
		v6 = r.query(ctx, name, dns.TypeAAAA)
		close(done)
	}()
	v4 := r.query(ctx, name, dns.TypeA)
	<-done
	if v4.canceled || v6.canceled {
		return abandoned, false
	}
	r.stats.observe(time.Since(start))

	e, life := r.merge(v4, v6)
	e.expires = r.now().Add(life)
	return e, life > 0
}

// merge combines the A and AAAA answers into one cache entry and says how
// long it may be used.
func (r *Resolver) merge(v4, v6 answer) (entry, time.Duration) {
	if addrs := append(slices.Clip(v4.addrs), v6.addrs...); len(addrs) > 0 {
		ttl := time.Duration(1<<63 - 1)
		for _, a := range []answer{v4, v6} {
			if len(a.addrs) > 0 {
				ttl = min(ttl, a.ttl)
			}
		}
		return entry{addrs: addrs}, r.lifetime(r.refresh, ttl)
	}
	// No address. NXDOMAIN is authoritative; otherwise a failure (timeout,
	// SERVFAIL) says more than the other type's NODATA.
	switch {
	case v4.fail == failNotFound || v6.fail == failNotFound:
		return entry{fail: failNotFound}, r.lifetime(r.negTTL, minKnown(v4, v6))
	case v4.fail != nil:
		return entry{fail: v4.fail}, r.lifetime(r.negTTL, noTTL)
	case v6.fail != nil:
		return entry{fail: v6.fail}, r.lifetime(r.negTTL, noTTL)
	default: // NODATA for both
		return entry{fail: failNotFound}, r.lifetime(r.negTTL, minKnown(v4, v6))
	}
}

// lifetime caps max by ttl when TTLs are respected and ttl is known.
func (r *Resolver) lifetime(max, ttl time.Duration) time.Duration {
	if r.respectTTL && ttl != noTTL {
		return min(max, ttl)
	}
	return max
}

// minKnown is the smaller known TTL of two negative answers.
func minKnown(a, b answer) time.Duration {
	switch {
	case a.ttl == noTTL:
		return b.ttl
	case b.ttl == noTTL:
		return a.ttl
	}
	return min(a.ttl, b.ttl)
}
