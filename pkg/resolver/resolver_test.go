package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// newTest returns a resolver on s with the default options changed by edit,
// and the fake clock that drives its cache.
func newTest(t *testing.T, s *testDNS, edit func(*Options)) (*Resolver, *fakeClock) {
	t.Helper()
	o := DefaultOptions()
	o.Servers = []string{s.addr}
	o.Timeout = time.Second
	if edit != nil {
		edit(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	r.now = clk.Now
	return r, clk
}

func lookup(t *testing.T, r *Resolver, host string) []netip.Addr {
	t.Helper()
	addrs, err := r.LookupNetIP(context.Background(), host)
	if err != nil {
		t.Fatalf("LookupNetIP(%q): %v", host, err)
	}
	return addrs
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func wantQueries(t *testing.T, s *testDNS, name string, want int) {
	t.Helper()
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		if got := s.queries(name, qt); got != want {
			t.Errorf("%s %s queries = %d, want %d", name, dns.TypeToString[qt], got, want)
		}
	}
}

func TestMergesAAndAAAA(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, nil)
	for host, want := range map[string][]netip.Addr{
		"dual.test":   addrs("192.0.2.1", "2001:db8::1"),
		"v4only.test": addrs("192.0.2.1"),
		"v6only.test": addrs("2001:db8::1"),
	} {
		if got := lookup(t, r, host); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", host, got, want)
		}
		wantQueries(t, s, host, 1)
	}
}

func TestCacheHit(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, nil)
	first := lookup(t, r, "www.example.test")
	second := lookup(t, r, "WWW.Example.Test.") // same name: case and final dot do not matter
	if !slices.Equal(first, second) {
		t.Errorf("cached answer %v, first answer %v", second, first)
	}
	wantQueries(t, s, "www.example.test", 1)
	second[0] = netip.MustParseAddr("203.0.113.99") // a caller's copy is its own
	if got := lookup(t, r, "www.example.test"); got[0] != first[0] {
		t.Errorf("the cache shares its slice with callers: got %v", got)
	}
	st := r.Stats()
	if st.Lookups != 3 || st.Misses != 1 || st.Hits != 2 || st.Entries != 1 || st.Latency.Count != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestRefreshEvenWithLongTTL(t *testing.T) {
	s := startDNS(t, nil) // TTL 3600 s
	r, clk := newTest(t, s, func(o *Options) { o.Refresh = 10 * time.Minute })
	lookup(t, r, "a.test")
	clk.Advance(9 * time.Minute)
	lookup(t, r, "a.test")
	wantQueries(t, s, "a.test", 1)
	clk.Advance(2 * time.Minute) // 11 min > Refresh, < TTL
	lookup(t, r, "a.test")
	wantQueries(t, s, "a.test", 2)
	if st := r.Stats(); st.Refreshes != 1 || st.Misses != 2 || st.Hits != 1 {
		t.Errorf("stats %+v", st)
	}
	lookup(t, r, "a.test") // the refreshed entry is fresh again
	wantQueries(t, s, "a.test", 2)
}

func TestTTLUpperBound(t *testing.T) {
	s := startDNS(t, nil)
	s.ttl.Store(5)
	r, clk := newTest(t, s, nil)
	lookup(t, r, "short.test")
	clk.Advance(4 * time.Second)
	lookup(t, r, "short.test")
	wantQueries(t, s, "short.test", 1)
	clk.Advance(2 * time.Second) // 6 s > TTL
	lookup(t, r, "short.test")
	wantQueries(t, s, "short.test", 2)

	// RespectTTL off: the paper's behaviour, Refresh alone decides.
	r2, clk2 := newTest(t, s, func(o *Options) { o.RespectTTL = false })
	lookup(t, r2, "ignored.test")
	clk2.Advance(10 * time.Minute) // TTL 5 s, Refresh 30 min
	lookup(t, r2, "ignored.test")
	wantQueries(t, s, "ignored.test", 1)
}

func TestCNAMEChain(t *testing.T) {
	s := startDNS(t, nil)
	r, clk := newTest(t, s, nil)
	if got, want := lookup(t, r, "alias.test"), addrs("203.0.113.7"); !slices.Equal(got, want) {
		t.Errorf("alias.test = %v, want %v (the unrelated record must be ignored)", got, want)
	}
	clk.Advance(61 * time.Second) // the CNAME's 60 s TTL bounds the answer
	lookup(t, r, "alias.test")
	if n := s.queries("alias.test", dns.TypeA); n != 2 {
		t.Errorf("A queries = %d, want 2", n)
	}
}

func TestNegativeCaching(t *testing.T) {
	s := startDNS(t, nil)
	r, clk := newTest(t, s, nil)
	for range 2 {
		_, err := r.LookupNetIP(context.Background(), "example.invalid")
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if got, want := err.Error(), "lookup example.invalid: no such host"; got != want {
			t.Errorf("err = %q, want %q", got, want)
		}
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound {
			t.Errorf("err = %#v, want a *net.DNSError with IsNotFound", err)
		}
	}
	wantQueries(t, s, "example.invalid", 1)
	clk.Advance(29 * time.Second)
	r.LookupNetIP(context.Background(), "example.invalid")
	wantQueries(t, s, "example.invalid", 1)
	clk.Advance(2 * time.Second) // past NegativeTTL (30 s)
	r.LookupNetIP(context.Background(), "example.invalid")
	wantQueries(t, s, "example.invalid", 2)
	if st := r.Stats(); st.NegativeHits != 2 || st.Errors != 4 || st.Misses != 2 {
		t.Errorf("stats %+v", st)
	}

	// The zone's SOA negative TTL caps NegativeTTL.
	s.soaTTL.Store(5)
	r.LookupNetIP(context.Background(), "short.invalid")
	clk.Advance(6 * time.Second)
	r.LookupNetIP(context.Background(), "short.invalid")
	wantQueries(t, s, "short.invalid", 2)
}

func TestNoData(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, nil)
	_, err := r.LookupNetIP(context.Background(), "nodata.test")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	r.LookupNetIP(context.Background(), "nodata.test")
	wantQueries(t, s, "nodata.test", 1)
}

func TestServerFailureCachedAfterRetries(t *testing.T) {
	s := startDNS(t, nil)
	r, clk := newTest(t, s, nil) // Attempts 2
	for range 3 {
		_, err := r.LookupNetIP(context.Background(), "fail.test")
		var de *net.DNSError
		if !errors.Is(err, ErrServerFailure) || !errors.As(err, &de) || !de.Temporary() {
			t.Fatalf("err = %v, want a temporary ErrServerFailure", err)
		}
	}
	wantQueries(t, s, "fail.test", 2) // one lookup, retried once
	clk.Advance(31 * time.Second)
	r.LookupNetIP(context.Background(), "fail.test")
	wantQueries(t, s, "fail.test", 4)
}

func TestTruncatedFallsBackToTCP(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, nil)
	got := lookup(t, r, "big.test")
	if len(got) != 100 {
		t.Fatalf("got %d addresses, want 100", len(got))
	}
	if n := s.tcpQueries("big.test", dns.TypeA); n != 1 {
		t.Errorf("TCP A queries = %d, want 1", n)
	}
}

func TestCoalescing(t *testing.T) {
	s := startDNS(t, func(name string) time.Duration {
		if strings.HasPrefix(name, "slow") {
			return 300 * time.Millisecond
		}
		return 0
	})
	r, _ := newTest(t, s, nil)
	const callers = 100
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			<-start
			got, err := r.LookupNetIP(context.Background(), "slow.test")
			if err == nil && len(got) != 2 {
				err = errors.New("wrong answer")
			}
			if err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	wantQueries(t, s, "slow.test", 1)
	if st := r.Stats(); st.Misses != 1 || st.Coalesced != callers-1 {
		t.Errorf("misses %d, coalesced %d; want 1, %d", st.Misses, st.Coalesced, callers-1)
	}
}

func TestManyNamesInFlightAtOnce(t *testing.T) {
	const delay = 200 * time.Millisecond
	s := startDNS(t, func(string) time.Duration { return delay })
	r, _ := newTest(t, s, nil)
	const names = 50
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range names {
		wg.Go(func() {
			if _, err := r.LookupNetIP(context.Background(), fmt.Sprintf("n%d.test", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Serialized lookups would take names*delay = 10 s.
	if took := time.Since(begin); took > 5*delay {
		t.Errorf("%d lookups of distinct names took %v: not concurrent", names, took)
	}
	if st := r.Stats(); st.Misses != names {
		t.Errorf("misses = %d, want %d", st.Misses, names)
	}
}

func TestMaxInFlight(t *testing.T) {
	const delay = 100 * time.Millisecond
	s := startDNS(t, func(string) time.Duration { return delay })
	r, _ := newTest(t, s, func(o *Options) { o.MaxInFlight = 2 })
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range 6 {
		wg.Go(func() { lookup(t, r, fmt.Sprintf("m%d.test", i)) })
	}
	wg.Wait()
	// 6 names, 2 at a time: 3 rounds.
	if took := time.Since(begin); took < 3*delay-10*time.Millisecond {
		t.Errorf("took %v: more than MaxInFlight lookups ran at once", took)
	}
}

func TestLRUEvictionOrder(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, func(o *Options) { o.CacheSize = 3 })
	for _, h := range []string{"a.test", "b.test", "c.test", "a.test", "d.test"} {
		lookup(t, r, h)
	}
	// a was used after b and c, so d's arrival evicted b, the least recent.
	if got, want := r.cache.keys(), []string{"d.test", "a.test", "c.test"}; !slices.Equal(got, want) {
		t.Fatalf("cache order %v, want %v", got, want)
	}
	lookup(t, r, "a.test")
	lookup(t, r, "b.test") // evicts c
	wantQueries(t, s, "a.test", 1)
	wantQueries(t, s, "b.test", 2)
	if got, want := r.cache.keys(), []string{"b.test", "a.test", "d.test"}; !slices.Equal(got, want) {
		t.Errorf("cache order %v, want %v", got, want)
	}
	if st := r.Stats(); st.Entries != 3 {
		t.Errorf("entries = %d, want 3", st.Entries)
	}
}

func TestLRUReusesTailNode(t *testing.T) {
	c := newLRU(2)
	c.put("x", entry{})
	c.put("y", entry{})
	tail := c.tail
	c.put("z", entry{})
	if c.head != tail || tail.key != "z" || c.len() != 2 {
		t.Errorf("the new name should take over the tail node: head %p %q, old tail %p", c.head, c.head.key, tail)
	}
	if _, ok := c.get("x"); ok {
		t.Error("x should have been evicted")
	}
	if got := c.keys(); !slices.Equal(got, []string{"z", "y"}) {
		t.Errorf("keys %v", got)
	}
}

func TestIPLiterals(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, nil)
	for _, ip := range []string{"192.0.2.7", "2001:db8::7", "::ffff:192.0.2.7", "fe80::1%eth0"} {
		if got := lookup(t, r, ip); !slices.Equal(got, addrs(ip)) {
			t.Errorf("%s = %v", ip, got)
		}
	}
	if n := s.totalQueries(); n != 0 {
		t.Errorf("%d queries sent for IP literals", n)
	}
}

func TestMalformedNames(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, nil)
	for _, host := range []string{"", ".", "a..b", strings.Repeat("x", 64) + ".test", strings.Repeat("abc.", 70) + "test"} {
		if _, err := r.LookupNetIP(context.Background(), host); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: err = %v, want ErrNotFound", host, err)
		}
	}
	if n := s.totalQueries(); n != 0 {
		t.Errorf("%d queries sent for malformed names", n)
	}
}

func TestTimeout(t *testing.T) {
	s := startDNS(t, nil)
	r, _ := newTest(t, s, func(o *Options) { o.Timeout = 100 * time.Millisecond }) // Attempts 2
	begin := time.Now()
	_, err := r.LookupNetIP(context.Background(), "silent.test")
	took := time.Since(begin)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if got, want := err.Error(), "lookup silent.test: i/o timeout"; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("err is not a net.Error with Timeout(): %#v", err)
	}
	if took < 200*time.Millisecond || took > time.Second {
		t.Errorf("took %v, want about Attempts*Timeout = 200ms", took)
	}
	wantQueries(t, s, "silent.test", 2)
	begin = time.Now()
	r.LookupNetIP(context.Background(), "silent.test") // cached failure: no wait
	if took := time.Since(begin); took > 50*time.Millisecond {
		t.Errorf("cached timeout took %v", took)
	}
}

func TestNextServerAfterTimeout(t *testing.T) {
	s := startDNS(t, nil)
	dead, err := net.ListenPacket("udp", "127.0.0.1:0") // reads nothing, answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	r, _ := newTest(t, s, func(o *Options) {
		o.Servers = []string{dead.LocalAddr().String(), s.addr}
		o.Timeout = 100 * time.Millisecond
	})
	if got := lookup(t, r, "x.test"); len(got) != 2 {
		t.Errorf("got %v", got)
	}
}

func TestContextCancellation(t *testing.T) {
	s := startDNS(t, func(name string) time.Duration {
		if strings.HasPrefix(name, "slow") {
			return 500 * time.Millisecond
		}
		return 0
	})
	r, _ := newTest(t, s, nil)

	// A lone caller gives up: it returns at once, and the flight is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := r.LookupNetIP(ctx, "slow1.test")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(begin); took > 300*time.Millisecond {
		t.Errorf("cancelled lookup took %v", took)
	}
	testutil.Eventually(t, 5*time.Second, "the abandoned flight to end", func() bool { return r.Stats().InFlight == 0 })

	// Of two waiters one gives up; the other still gets the answer.
	ctx2, cancel2 := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.LookupNetIP(ctx2, "slow2.test")
		errc <- err
	}()
	testutil.Eventually(t, 5*time.Second, "the first caller's flight", func() bool { return r.Stats().InFlight == 1 })
	done := make(chan []netip.Addr, 1)
	go func() {
		got, _ := r.LookupNetIP(context.Background(), "slow2.test")
		done <- got
	}()
	testutil.Eventually(t, 5*time.Second, "the second caller to join", func() bool { return r.Stats().Coalesced == 1 })
	cancel2()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if got := <-done; len(got) != 2 {
		t.Errorf("remaining waiter got %v", got)
	}
	wantQueries(t, s, "slow2.test", 1)
	lookup(t, r, "slow2.test") // and it was cached
	wantQueries(t, s, "slow2.test", 1)
}

func TestNew(t *testing.T) {
	if _, err := New(Options{Servers: []string{"dns.example:53"}}); err == nil {
		t.Error("a host name as server was accepted")
	}
	r, err := New(Options{Servers: []string{"192.0.2.53", "[2001:db8::53]:5353"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"192.0.2.53:53", "[2001:db8::53]:5353"}; !slices.Equal(r.servers, want) {
		t.Errorf("servers %v, want %v", r.servers, want)
	}
	r, err = New(Options{}) // from /etc/resolv.conf, or the fallback
	if err != nil || len(r.servers) == 0 {
		t.Fatalf("New(Options{}) = %v, %v", r, err)
	}
	if r.refresh != DefaultRefresh || r.negTTL != DefaultNegativeTTL || r.attempts != DefaultAttempts ||
		r.timeout != DefaultTimeout || r.respectTTL || cap(r.sem) != DefaultMaxInFlight {
		t.Errorf("zero options not defaulted: %+v", r)
	}
	if r.cache.capacity != DefaultCacheSize {
		t.Errorf("cache size %d, want %d", r.cache.capacity, DefaultCacheSize)
	}
}

func TestStatsHistogram(t *testing.T) {
	s := startDNS(t, func(string) time.Duration { return 3 * time.Millisecond })
	r, _ := newTest(t, s, nil)
	for _, h := range []string{"a.test", "b.test", "a.test"} {
		lookup(t, r, h)
	}
	h := r.Stats().Latency
	if h.Count != 2 || h.Max < 3*time.Millisecond || h.Sum < 6*time.Millisecond {
		t.Errorf("histogram %+v", h)
	}
	last := uint64(0)
	for _, b := range h.Buckets {
		if b.Count < last || b.Count > h.Count {
			t.Errorf("buckets not cumulative: %+v", h.Buckets)
		}
		last = b.Count
	}
	if h.Buckets[0].Count != 0 || h.Buckets[len(h.Buckets)-1].Count != 2 {
		t.Errorf("buckets %+v", h.Buckets)
	}
}
