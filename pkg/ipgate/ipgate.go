// Package ipgate enforces politeness per IP address across every fetcher
// replica of a crawl: at most Ceiling requests in flight to one address and
// at least Gap between two request starts.
//
// Host partitions cannot see that many hosts share one server (shared
// hosting, CDNs), so the per-host rules of the frontier do not bound the load
// on an address. The gate is a lease table in a JetStream key-value bucket,
// shared by all fetchers whether they run in one process or in many pods:
// one key per address holding the leases in force and the earliest time of
// the next start, changed only by compare-and-set on the key's revision.
// A lease carries an expiry, so a fetcher that dies holding one blocks the
// address for at most LeaseTTL.
//
// Times are the fetchers' wall clocks; skew between machines shortens or
// lengthens the per-IP gap by the skew (the per-host gap of the frontier is
// unaffected).
package ipgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// Options configure a Gate.
type Options struct {
	// Ceiling is the most requests in flight to one address (0: no limit).
	Ceiling int
	// Gap is the least time between two request starts to one address.
	Gap time.Duration
	// LeaseTTL bounds how long a lease holds if its holder never releases
	// it (a crashed fetcher); it should exceed the longest fetch.
	LeaseTTL time.Duration
	// Now reads the clock that grants, spaces and expires leases (default
	// time.Now). Tests inject a manual clock. Wait still waits in real time.
	Now func() time.Time
	// Keep is how long a released lease stays with its gate, unused, for
	// the gate's next request to the same address, instead of going back
	// to the bucket (0: every lease goes back at once). A kept lease
	// counts against the ceiling as a request in flight does, so the
	// address never has more than Ceiling requests in flight; what it
	// saves is two compare-and-sets on the bucket per request (8 % of the
	// services mode's CPU, docs/benchmarks.md). Only for a bucket gate
	// without a Gap: with a gap every start must be written.
	Keep time.Duration
	// Warn hears of a kept lease that could not be given back (it holds
	// its slot until it expires); nil: nobody.
	Warn func(msg string, args ...any)
}

// reuseFor is how long after its grant a lease may be taken again from the
// kept ones: its expiry (grant + LeaseTTL) stays at least LeaseTTL - reuseFor
// ahead of a request that starts on it, which the fetcher sizes as its
// timeout and 30 s.
func (o Options) reuseFor() time.Duration { return min(o.LeaseTTL/2, 20*time.Second) }

// Gate is the per-IP lease table. A nil *Gate lets everything through.
type Gate struct {
	kv  jetstream.KeyValue // nil: the table is local (mem)
	mem *localTable
	o   Options
	now func() time.Time

	// last caches the value and revision this gate last wrote per key: the
	// next compare-and-set on it usually succeeds without reading first
	// (one round trip instead of two). A stale entry only costs a failed
	// write and a read; its content is never trusted to refuse a request.
	mu   sync.Mutex
	last map[string]cached // guarded by mu

	// kept are released leases held for reuse (Options.Keep), by key.
	keepMu sync.Mutex
	kept   map[string][]*Lease // guarded by keepMu
	closed bool                // guarded by keepMu: Release gives back
	stop   chan struct{}       // ends the sweeper (nil: none)
}

type cached struct {
	e   entry
	rev uint64
}

// maxCached bounds the cache; it is simply emptied when full.
const maxCached = 10000

// entry is the value stored per address.
type entry struct {
	// Leases maps lease IDs to their expiry (unix ms).
	Leases map[string]int64 `json:"leases,omitempty"`
	// Next is the earliest start of the next request (unix ms).
	Next int64 `json:"next,omitempty"`
}

// maxCAS bounds compare-and-set retries under contention on one address.
const maxCAS = 32

// Open creates or binds the gate's bucket. It returns nil (no gate) when
// neither a ceiling nor a gap is set.
func Open(ctx context.Context, js jetstream.JetStream, bucket string, o Options) (*Gate, error) {
	if o.Ceiling <= 0 && o.Gap <= 0 {
		return nil, nil
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	kv, err := bus.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: bucket, Description: "per-IP politeness leases", Storage: jetstream.FileStorage,
		// Keys of idle addresses go away by themselves; a key in use is
		// rewritten at every request, so it never ages out while needed.
		TTL: max(o.LeaseTTL, o.Gap) + time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("ip gate bucket %s: %w", bucket, err)
	}
	g := &Gate{kv: kv, o: o, now: o.Now, last: map[string]cached{}}
	if g.keeps() {
		g.kept, g.stop = map[string][]*Lease{}, make(chan struct{})
		go g.sweep(max(o.Keep/2, 10*time.Millisecond))
	}
	return g, nil
}

// OpenLocal returns a gate whose table lives in this process, for a crawl
// whose fetchers all run here and share it (`trawler run` with no NATS
// listener: no other process can reach the bucket). The rules are the
// same; what goes is a key-value round trip and a stored message per
// grant and release. nil when o sets no limit, as Open.
func OpenLocal(o Options) *Gate {
	if o.Ceiling <= 0 && o.Gap <= 0 {
		return nil
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Gate{mem: &localTable{m: map[string]localEntry{}}, o: o, now: o.Now, last: map[string]cached{}}
}

// localTable is OpenLocal's table: the bucket's compare-and-set on
// revisions, in memory. Entries are copied in and out, as the bucket's
// encoding does.
type localTable struct {
	mu  sync.Mutex
	m   map[string]localEntry
	rev uint64
}

type localEntry struct {
	e   entry
	rev uint64
}

func (t *localTable) get(key string) (entry, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	le, ok := t.m[key]
	if !ok {
		return entry{}, 0
	}
	return le.e.clone(), le.rev
}

// put stores e if key is at rev (0: absent), and returns its new revision;
// now is the gate's clock (unix ms).
func (t *localTable) put(key string, e entry, rev uint64, now int64) (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if le, ok := t.m[key]; ok && le.rev != rev || !ok && rev != 0 {
		return 0, false
	}
	t.rev++
	if len(e.Leases) == 0 && e.Next <= now {
		// Idle and past its gap: nothing to keep (the bucket's keys
		// age out by TTL instead).
		delete(t.m, key)
		return 0, true
	}
	t.m[key] = localEntry{e: e.clone(), rev: t.rev}
	return t.rev, true
}

func (e entry) clone() entry { return entry{Next: e.Next, Leases: maps.Clone(e.Leases)} }

// Lease is a granted slot; Release gives it back.
type Lease struct {
	g   *Gate
	key string
	id  string
	// Granted is when the slot was taken by the gate's clock (milliseconds):
	// the start the address's gap counts from.
	Granted time.Time
	// idleSince is when the lease was last released into the kept ones.
	idleSince time.Time
}

// Acquire tries once to take a slot for addr. It returns the lease, or nil
// and how long to wait before trying again. An empty addr (unknown address)
// is always granted.
func (g *Gate) Acquire(ctx context.Context, addr string) (*Lease, time.Duration, error) {
	if g == nil || addr == "" {
		return nil, 0, nil
	}
	key := Key(addr)
	if l := g.reuse(ctx, key); l != nil {
		return l, 0, nil
	}
	id := nuid.Next()
	for attempt := range maxCAS {
		e, rev, ok := g.cachedEntry(key)
		if attempt > 0 || !ok || g.wait(e, g.now().UnixMilli()) > 0 {
			var err error
			if e, rev, err = g.get(ctx, key); err != nil {
				return nil, 0, err
			}
		}
		now := g.now().UnixMilli()
		e.prune(now)
		if wait := g.wait(e, now); wait > 0 {
			return nil, wait, nil
		}
		if e.Leases == nil {
			e.Leases = map[string]int64{}
		}
		e.Leases[id] = now + g.o.LeaseTTL.Milliseconds()
		e.Next = now + g.o.Gap.Milliseconds()
		ok, err := g.put(ctx, key, e, rev)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			return &Lease{g: g, key: key, id: id, Granted: time.UnixMilli(now)}, 0, nil
		}
	}
	return nil, 10 * time.Millisecond, nil // lost every race: try again soon
}

// wait is how long until e admits another request (0: now).
func (g *Gate) wait(e entry, now int64) time.Duration {
	var wait int64
	if e.Next > now {
		wait = e.Next - now
	}
	if g.o.Ceiling > 0 && len(e.Leases) >= g.o.Ceiling {
		soonest := int64(-1)
		for _, exp := range e.Leases {
			if soonest < 0 || exp < soonest {
				soonest = exp
			}
		}
		// A lease usually ends long before it expires: poll well before.
		wait = max(wait, min(soonest-now, 50))
	}
	return time.Duration(wait) * time.Millisecond
}

// Wait takes a slot for addr, waiting at most maxWait. It returns nil and
// the remaining wait when the address stayed busy.
func (g *Gate) Wait(ctx context.Context, addr string, maxWait time.Duration) (*Lease, time.Duration, error) {
	deadline := time.Now().Add(maxWait)
	for {
		l, wait, err := g.Acquire(ctx, addr)
		if err != nil || wait == 0 {
			return l, 0, err
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, wait, nil
		}
		select {
		case <-ctx.Done():
			return nil, wait, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Release gives the slot back, or keeps it with the gate for its next
// request to the address (Options.Keep). A nil lease is a no-op. Under contention on
// the address's key (every fetcher of a busy server writes it) a release
// keeps trying, with a short random pause between rounds, until it is done,
// ctx ends or releaseWithin has passed: a lease left to expire would hold one
// of the address's slots for LeaseTTL (minutes). The error says why the lease
// could not be released and when it expires by itself.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || l.g.keep(l) {
		return nil
	}
	return l.giveBack(ctx)
}

// giveBack removes the lease from the table; see Release.
func (l *Lease) giveBack(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, releaseWithin)
	defer cancel()
	var err error
retry:
	for round := 0; ; round++ {
		var done bool
		if done, err = l.release(ctx); done {
			return nil
		}
		if !errors.Is(err, errContention) {
			break // the bucket failed, or ctx ended
		}
		pause := time.Duration(1+rand.IntN(min(1<<round, 64))) * time.Millisecond
		select {
		case <-ctx.Done():
			break retry
		case <-time.After(pause):
		}
	}
	expiry := l.Granted.Add(l.g.o.LeaseTTL).Format(time.TimeOnly)
	return fmt.Errorf("ipgate: releasing the lease on %s: %w; it holds a slot until it expires at %s", l.key, err, expiry)
}

// releaseWithin bounds how long Release keeps trying.
const releaseWithin = 10 * time.Second

var errContention = errors.New("other fetchers kept changing the key")

// release makes one round of compare-and-set attempts. It reports true when
// the lease is gone (released now, or expired and pruned before).
func (l *Lease) release(ctx context.Context) (bool, error) {
	for attempt := range maxCAS {
		e, rev, fromCache := l.g.cachedEntry(l.key)
		if attempt > 0 || !fromCache {
			fromCache = false
			var err error
			if e, rev, err = l.g.get(ctx, l.key); err != nil {
				return false, err
			}
		}
		if _, held := e.Leases[l.id]; !held {
			if !fromCache {
				return true, nil // expired and pruned already
			}
			l.g.forget(l.key) // the cache is behind: read
			continue
		}
		delete(e.Leases, l.id)
		e.prune(l.g.now().UnixMilli())
		ok, err := l.g.put(ctx, l.key, e, rev)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, errContention
}

// keeps reports whether released leases stay with the gate (Options.Keep).
func (g *Gate) keeps() bool { return g.kv != nil && g.o.Keep > 0 && g.o.Gap <= 0 }

// keep holds l for reuse if the gate keeps leases and l is young enough.
func (g *Gate) keep(l *Lease) bool {
	if !g.keeps() || g.now().Sub(l.Granted) > g.o.reuseFor() {
		return false
	}
	g.keepMu.Lock()
	defer g.keepMu.Unlock()
	if g.closed {
		return false
	}
	l.idleSince = g.now()
	g.kept[l.key] = append(g.kept[l.key], l)
	return true
}

// reuse takes a kept lease on key that is young enough, if any; the ones
// too old to start a request on go back first, so that the slot they hold
// is free for the new lease.
func (g *Gate) reuse(ctx context.Context, key string) *Lease {
	if !g.keeps() {
		return nil
	}
	var old []*Lease
	defer func() {
		for _, l := range old {
			g.giveBack(ctx, l)
		}
	}()
	g.keepMu.Lock()
	defer g.keepMu.Unlock()
	ls := g.kept[key]
	for len(ls) > 0 {
		l := ls[len(ls)-1]
		ls = ls[:len(ls)-1]
		if g.now().Sub(l.Granted) <= g.o.reuseFor() {
			g.setKept(key, ls)
			return l
		}
		old = append(old, l)
	}
	g.setKept(key, ls)
	return nil
}

func (g *Gate) setKept(key string, ls []*Lease) {
	if len(ls) == 0 {
		delete(g.kept, key)
		return
	}
	g.kept[key] = ls
}

// giveBack gives a kept lease back to the bucket; one that fails expires,
// and Options.Warn hears of it.
func (g *Gate) giveBack(ctx context.Context, l *Lease) {
	if err := l.giveBack(ctx); err != nil && g.o.Warn != nil {
		g.o.Warn("giving back a kept per-IP lease failed; it holds its slot until it expires", "err", err)
	}
}

// sweep gives back, every interval, the kept leases unused for Keep or too
// old to be reused, until Close.
func (g *Gate) sweep(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		now := g.now()
		var due []*Lease
		g.keepMu.Lock()
		for key, ls := range g.kept {
			held := ls[:0]
			for _, l := range ls {
				if now.Sub(l.idleSince) >= g.o.Keep || now.Sub(l.Granted) > g.o.reuseFor() {
					due = append(due, l)
				} else {
					held = append(held, l)
				}
			}
			g.setKept(key, held)
		}
		g.keepMu.Unlock()
		for _, l := range due {
			g.giveBack(context.Background(), l)
		}
	}
}

// Close gives back the kept leases and ends the gate's sweeper; leases
// released after it go back at once. A nil gate is a no-op.
func (g *Gate) Close(ctx context.Context) error {
	if g == nil || !g.keeps() {
		return nil
	}
	g.keepMu.Lock()
	if g.closed {
		g.keepMu.Unlock()
		return nil
	}
	g.closed = true
	close(g.stop)
	var all []*Lease
	for _, ls := range g.kept {
		all = append(all, ls...)
	}
	g.kept = map[string][]*Lease{}
	g.keepMu.Unlock()
	var errs []error
	for _, l := range all {
		errs = append(errs, l.giveBack(ctx))
	}
	return errors.Join(errs...)
}

// cachedEntry returns a copy of the last value this gate wrote for key.
func (g *Gate) cachedEntry(key string) (entry, uint64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.last[key]
	if !ok {
		return entry{}, 0, false
	}
	return c.e.clone(), c.rev, true
}

func (g *Gate) remember(key string, e entry, rev uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.last) >= maxCached {
		g.last = map[string]cached{}
	}
	g.last[key] = cached{e, rev}
}

func (g *Gate) forget(key string) {
	g.mu.Lock()
	delete(g.last, key)
	g.mu.Unlock()
}

func (e *entry) prune(now int64) {
	for id, exp := range e.Leases {
		if exp <= now {
			delete(e.Leases, id)
		}
	}
}

func (g *Gate) get(ctx context.Context, key string) (entry, uint64, error) {
	if g.mem != nil {
		e, rev := g.mem.get(key)
		return e, rev, nil
	}
	kve, err := g.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return entry{}, 0, nil
	}
	if err != nil {
		return entry{}, 0, fmt.Errorf("ipgate: get %s: %w", key, err)
	}
	var e entry
	if err := json.Unmarshal(kve.Value(), &e); err != nil {
		return entry{}, kve.Revision(), nil // unreadable: start afresh over it
	}
	return e, kve.Revision(), nil
}

// put writes e if the key is still at rev (0: the key must not exist). It
// reports false when another fetcher changed the key first.
func (g *Gate) put(ctx context.Context, key string, e entry, rev uint64) (bool, error) {
	newRev, ok, err := g.write(ctx, key, e, rev)
	if ok {
		g.remember(key, e, newRev)
	} else {
		g.forget(key)
	}
	return ok, err
}

// write is put's compare-and-set on the table: the bucket's, or the local
// one. ok is false when another writer changed the key first.
func (g *Gate) write(ctx context.Context, key string, e entry, rev uint64) (newRev uint64, ok bool, err error) {
	if g.mem != nil {
		newRev, ok = g.mem.put(key, e, rev, g.now().UnixMilli())
		return newRev, ok, nil
	}
	data, err := json.Marshal(e)
	if err != nil {
		return 0, false, err
	}
	if rev == 0 {
		newRev, err = g.kv.Create(ctx, key, data)
	} else {
		newRev, err = g.kv.Update(ctx, key, data, rev)
	}
	switch {
	case err == nil:
		return newRev, true, nil
	case errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err):
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("ipgate: put %s: %w", key, err)
}

func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return true
	}
	return strings.Contains(err.Error(), "wrong last sequence")
}

// Key is the bucket key of an address: KV keys allow no ':' (IPv6).
func Key(addr string) string {
	return strings.NewReplacer(":", "_", "%", "-").Replace(addr)
}
