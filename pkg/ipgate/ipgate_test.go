package ipgate

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// Several gates on one bucket (as several fetcher replicas) never let more
// than Ceiling requests run on one address, and space their starts by Gap.
// openGates returns n gates sharing one table: the bucket (Open), or, with
// local, one table in memory (OpenLocal's, shared as a process's fetcher
// workers share it).
func openGates(t *testing.T, n int, o Options, local bool) []*Gate {
	t.Helper()
	var gates []*Gate
	if local {
		first := OpenLocal(o)
		for range n {
			g := OpenLocal(o)
			g.mem = first.mem
			gates = append(gates, g)
		}
		return gates
	}
	js, names := testbus.Start(t, 1)
	for range n {
		g, err := Open(context.Background(), js, names.IPBucket(), o)
		if err != nil {
			t.Fatal(err)
		}
		gates = append(gates, g)
	}
	return gates
}

// eachTable runs test against the bucket and against a local table.
func eachTable(t *testing.T, test func(t *testing.T, local bool)) {
	for _, local := range []bool{false, true} {
		name := "bucket"
		if local {
			name = "local"
		}
		t.Run(name, func(t *testing.T) { test(t, local) })
	}
}

func TestCeilingAndGapAcrossReplicas(t *testing.T) { eachTable(t, testCeilingAndGap) }

func testCeilingAndGap(t *testing.T, local bool) {
	ctx := context.Background()
	const ceiling, gap = 2, 20 * time.Millisecond
	gates := openGates(t, 3, Options{Ceiling: ceiling, Gap: gap, LeaseTTL: time.Minute}, local)
	var (
		inFlight, peak atomic.Int32
		mu             sync.Mutex
		starts         []time.Time
		other          atomic.Int32
		wg             sync.WaitGroup
	)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := gates[i%len(gates)]
			for range 3 {
				l, wait, err := g.Wait(ctx, "10.0.0.1", 10*time.Second)
				if err != nil || l == nil {
					t.Errorf("Wait: %v (wait %v)", err, wait)
					return
				}
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				mu.Lock()
				starts = append(starts, l.Granted)
				mu.Unlock()
				// Another address is not held up by this one.
				if l2, _, err := g.Acquire(ctx, "2001:db8::1"); err == nil && l2 != nil {
					other.Add(1)
					_ = l2.Release(ctx)
				}
				time.Sleep(15 * time.Millisecond) // the request in flight: what the ceiling bounds
				inFlight.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > ceiling || p < 1 {
		t.Errorf("peak concurrency %d, ceiling %d", p, ceiling)
	}
	if len(starts) != 36 {
		t.Fatalf("%d requests ran, want 36", len(starts))
	}
	// Grant times, not when a goroutine got round to noting its grant: on
	// a loaded machine those differ by more than the gap's precision.
	slices.SortFunc(starts, time.Time.Compare)
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d < gap {
			t.Errorf("start %d came %v after the previous one, gap %v", i, d, gap)
		}
	}
	if other.Load() == 0 {
		t.Error("a second address was never granted while the first was busy")
	}
}

// A lease whose holder died expires; Release of a nil lease is harmless.
func TestLeaseExpires(t *testing.T) { eachTable(t, testLeaseExpires) }

func testLeaseExpires(t *testing.T, local bool) {
	ctx := context.Background()
	var clock testutil.Clock
	g := openGates(t, 1, Options{Ceiling: 1, LeaseTTL: 100 * time.Millisecond, Now: clock.Now}, local)[0]
	l, _, err := g.Acquire(ctx, "10.0.0.2")
	if err != nil || l == nil {
		t.Fatalf("first Acquire: %v %v", l, err)
	}
	if l2, wait, err := g.Acquire(ctx, "10.0.0.2"); err != nil || l2 != nil || wait <= 0 {
		t.Fatalf("second Acquire while held: %v %v %v", l2, wait, err)
	}
	clock.Advance(99 * time.Millisecond)
	if l2, _, err := g.Acquire(ctx, "10.0.0.2"); err != nil || l2 != nil {
		t.Fatalf("Acquire 1ms before expiry: %v %v", l2, err)
	}
	clock.Advance(time.Millisecond) // the holder "died"
	if l3, wait, err := g.Acquire(ctx, "10.0.0.2"); err != nil || l3 == nil {
		t.Fatalf("Acquire after expiry: %v %v %v", l3, wait, err)
	}
	if err := (*Lease)(nil).Release(ctx); err != nil {
		t.Error(err)
	}
	var none *Gate
	if l, wait, err := none.Acquire(ctx, "10.0.0.3"); l != nil || wait != 0 || err != nil {
		t.Errorf("nil gate: %v %v %v", l, wait, err)
	}
	js, names := testbus.Start(t, 1)
	if g, err := Open(ctx, js, names.IPBucket(), Options{}); g != nil || err != nil {
		t.Errorf("Open without limits = %v, %v; want no gate", g, err)
	}
	if g := OpenLocal(Options{}); g != nil {
		t.Errorf("OpenLocal without limits = %v; want no gate", g)
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"192.0.2.1": "192.0.2.1", "2001:db8::1": "2001_db8__1", "fe80::1%eth0": "fe80__1-eth0"} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

// Issue 19 #11: many leases on one address released at once all go, however
// the compare-and-set races fall; none is left to hold a slot until expiry.
func TestReleaseUnderContentionLeavesNoLease(t *testing.T) { eachTable(t, testReleaseUnderContention) }

func testReleaseUnderContention(t *testing.T, local bool) {
	ctx := context.Background()
	gates := openGates(t, 4, Options{Ceiling: 1000, LeaseTTL: time.Hour}, local)
	var leases []*Lease
	for i := range 64 {
		l, _, err := gates[i%len(gates)].Wait(ctx, "10.0.0.9", 10*time.Second)
		if err != nil || l == nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		leases = append(leases, l)
	}
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	e, _, err := gates[0].get(ctx, Key("10.0.0.9"))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Leases) != 0 {
		t.Fatalf("%d leases left after every holder released", len(e.Leases))
	}
}

// The local table forgets an address once it holds no lease and its gap has
// passed (the bucket's keys age out instead), and not before: a release
// inside the gap keeps the gap.
func TestLocalTableForgetsIdleAddresses(t *testing.T) {
	ctx := context.Background()
	var clock testutil.Clock
	g := OpenLocal(Options{Ceiling: 1, Gap: 50 * time.Millisecond, LeaseTTL: time.Minute, Now: clock.Now})
	l, _, err := g.Acquire(ctx, "10.0.0.4")
	if err != nil || l == nil {
		t.Fatalf("Acquire: %v %v", l, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if l2, wait, _ := g.Acquire(ctx, "10.0.0.4"); l2 != nil || wait <= 0 {
		t.Fatalf("Acquire inside the gap after a release: %v, wait %v; want a wait", l2, wait)
	}
	clock.Advance(50 * time.Millisecond)
	l, _, err = g.Acquire(ctx, "10.0.0.4")
	if err != nil || l == nil {
		t.Fatalf("Acquire after the gap: %v %v", l, err)
	}
	clock.Advance(time.Second) // a fetch longer than the gap
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g.mem.mu.Lock()
	n := len(g.mem.m)
	g.mem.mu.Unlock()
	if n != 0 {
		t.Errorf("%d addresses kept after the last release past the gap, want 0", n)
	}
}

// A released lease stays with its gate for Keep: the gate's next request to
// the address takes it again without a write to the bucket, another gate
// (a fetcher replica) sees it as a request in flight, and it goes back to
// the bucket when unused for Keep, when too old to start a request on, or
// at Close.
func TestKeptLeases(t *testing.T) {
	ctx := context.Background()
	var clock testutil.Clock
	clock.Advance(time.Hour)
	o := Options{Ceiling: 1, LeaseTTL: 10 * time.Second, Keep: time.Minute, Now: clock.Now}
	gates := openGates(t, 2, o, false)
	a, b := gates[0], gates[1]
	const addr = "10.0.0.7"
	revision := func() uint64 {
		t.Helper()
		_, rev, err := a.get(ctx, Key(addr))
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	first, _, err := a.Acquire(ctx, addr)
	if err != nil || first == nil {
		t.Fatalf("Acquire: %v %v", first, err)
	}
	rev := revision()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, _, err := a.Acquire(ctx, addr)
	if err != nil || again != first {
		t.Fatalf("Acquire after a release: %v %v, want the kept lease", again, err)
	}
	if r := revision(); r != rev {
		t.Errorf("the bucket's key went from revision %d to %d: a kept lease costs no write", rev, r)
	}
	_ = again.Release(ctx)
	if l, wait, err := b.Acquire(ctx, addr); err != nil || l != nil || wait <= 0 {
		t.Fatalf("another gate took the address's one slot while the lease was kept: %v %v %v", l, wait, err)
	}

	// Too old to start a request on: given back, and a new lease granted.
	clock.Advance(o.reuseFor() + time.Millisecond)
	fresh, _, err := a.Acquire(ctx, addr)
	if err != nil || fresh == nil || fresh == first {
		t.Fatalf("Acquire past the reuse window: %v %v, want a new lease", fresh, err)
	}
	testutil.Eventually(t, 5*time.Second, "the old lease given back", func() bool {
		e, _, _ := a.get(ctx, Key(addr))
		_, old := e.Leases[first.id]
		return !old && len(e.Leases) == 1
	})
	_ = fresh.Release(ctx)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if l, _, err := b.Acquire(ctx, addr); err != nil || l == nil {
		t.Fatalf("the other gate after Close: %v %v, want the slot", l, err)
	}
}

// A kept lease unused for Keep goes back by itself.
func TestKeptLeaseGoesBackWhenUnused(t *testing.T) {
	ctx := context.Background()
	gates := openGates(t, 2, Options{Ceiling: 1, LeaseTTL: time.Minute, Keep: 50 * time.Millisecond}, false)
	l, _, err := gates[0].Acquire(ctx, "10.0.0.8")
	if err != nil || l == nil {
		t.Fatalf("Acquire: %v %v", l, err)
	}
	_ = l.Release(ctx)
	start := time.Now()
	l2, _, err := gates[1].Wait(ctx, "10.0.0.8", 5*time.Second)
	if err != nil || l2 == nil {
		t.Fatalf("the other gate never got the slot: %v %v", l2, err)
	}
	t.Logf("the other gate waited %v", time.Since(start))
	for _, g := range gates {
		_ = g.Close(ctx)
	}
}
