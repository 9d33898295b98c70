package resolver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmark knobs. The defaults keep `go test -bench . -benchtime 1x` under a
// minute; TRAWLER_BENCH_FULL=1 replays the paper's 1 million names.
const (
	benchNames   = 50000 // distinct host names
	benchZipfS   = 1.01  // Zipf exponent: web host popularity is close to s = 1
	benchWorkers = 64    // concurrent callers, like fetch workers
	// benchRounds interleaves the two resolvers' runs, so that a change in
	// the machine's speed during the run (a shared VM) hits both alike.
	benchRounds = 4
)

func benchStreamLen() int {
	if os.Getenv("TRAWLER_BENCH_FULL") == "1" {
		return 1_000_000
	}
	return 200_000
}

// goSampleLen is how much of the stream Go's resolver replays. It keeps no
// state between lookups and the stream's draws are independent, so any
// prefix measures its rate; a quarter keeps the default run under a minute.
// TRAWLER_BENCH_FULL=1 replays the whole stream with both.
func goSampleLen(streamLen int) int {
	if os.Getenv("TRAWLER_BENCH_FULL") == "1" {
		return streamLen
	}
	return streamLen / 4
}

// benchDelay is the server's answer delay: TRAWLER_BENCH_DELAY (a Go
// duration), 2ms by default, a nearby recursive resolver's cache hit.
func benchDelay(b *testing.B) time.Duration {
	v := os.Getenv("TRAWLER_BENCH_DELAY")
	if v == "" {
		return 2 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("TRAWLER_BENCH_DELAY: %v", err)
	}
	return d
}

// hostStream draws n host names with real-web repetition: Zipf over
// benchNames names, the same stream for every run (fixed seed).
func hostStream(n int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(rng, benchZipfS, 1, benchNames-1)
	names := make([]string, benchNames)
	for i, j := range rng.Perm(benchNames) { // popularity unrelated to spelling
		names[i] = "h" + strconv.Itoa(j) + ".bench.test"
	}
	out := make([]string, n)
	for i := range out {
		out[i] = names[z.Uint64()]
	}
	return out
}

type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// replay looks up every name of stream with benchWorkers workers and returns
// the time taken.
func replay(b *testing.B, stream []string, lookup lookupFunc) time.Duration {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	begin := time.Now()
	for range benchWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(stream) {
					return
				}
				if _, err := lookup(ctx, stream[i]); err != nil && failed.Add(1) == 1 {
					b.Errorf("lookup %s: %v", stream[i], err)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d lookups failed", n, len(stream))
	}
	return time.Since(begin)
}

// part is the k-th of benchRounds slices of stream.
func part(stream []string, k int) []string {
	return stream[k*len(stream)/benchRounds : (k+1)*len(stream)/benchRounds]
}

// BenchmarkStream compares, in one run and on one stream, Go's own resolver
// (pure Go, no cache) with this package's (cold cache), both asking the same
// local server, which answers every name after the delay.
func BenchmarkStream(b *testing.B) {
	stream := hostStream(benchStreamLen())
	for _, delay := range []time.Duration{benchDelay(b), 0} {
		b.Run(fmt.Sprintf("delay=%v", delay), func(b *testing.B) {
			s := startDNS(b, func(string) time.Duration { return delay })
			for b.Loop() {
				goRes := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, network, s.addr)
				}}
				goLookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
					return goRes.LookupNetIP(ctx, "ip", host)
				}
				o := DefaultOptions()
				o.Servers = []string{s.addr}
				r, err := New(o) // a cold cache every run
				if err != nil {
					b.Fatal(err)
				}

				goStream := stream[:goSampleLen(len(stream))]
				var goTime, ourTime time.Duration
				for k := range benchRounds {
					goTime += replay(b, part(goStream, k), goLookup)
					ourTime += replay(b, part(stream, k), r.LookupNetIP) // the cache carries over
				}
				goRate := float64(len(goStream)) / goTime.Seconds()
				ourRate := float64(len(stream)) / ourTime.Seconds()

				st := r.Stats()
				b.ReportMetric(goRate, "go-lookups/s")
				b.ReportMetric(ourRate, "ours-lookups/s")
				b.ReportMetric(ourRate/goRate, "x-go")
				b.ReportMetric(100*float64(st.Hits)/float64(st.Lookups), "hit%")
				b.ReportMetric(float64(st.Misses), "misses")
				b.ReportMetric(float64(st.Coalesced), "coalesced")
			}
		})
	}
}

// BenchmarkCacheHit measures concurrent hits on a full 50,000-name cache
// behind the one mutex (TRAWLER_BENCH_PAR goroutines per CPU, default 1).
// Run it with -benchtime 1s or more; at 1x it is only a smoke test.
func BenchmarkCacheHit(b *testing.B) {
	names := hostStream(1 << 16)
	r, err := New(Options{Servers: []string{"127.0.0.1:9"}})
	if err != nil {
		b.Fatal(err)
	}
	e := entry{addrs: addrs("192.0.2.1", "2001:db8::1"), expires: time.Now().Add(time.Hour)}
	for i := range benchNames {
		r.cache.put("h"+strconv.Itoa(i)+".bench.test", e)
	}
	if p, _ := strconv.Atoi(os.Getenv("TRAWLER_BENCH_PAR")); p > 0 {
		b.SetParallelism(p)
	}
	var seq atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := seq.Add(1) * 7919 // each goroutine walks the stream from its own place
		for pb.Next() {
			i++
			if _, err := r.LookupNetIP(context.Background(), names[i%uint64(len(names))]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
