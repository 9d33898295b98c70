package cachestudy

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/cachestudy/sim"
	"github.com/trawlerhq/trawler/internal/linkstream"
	"github.com/trawlerhq/trawler/pkg/cache"
)

// BenchmarkStudy times the whole study (every policy at 16 sizes, 2^4 to
// 2^19) on the synthetic link stream, and each policy alone, reporting
// ns per request per size: the figure that extrapolates to a 100-million
// request trace (docs/cache-study.md). TRAWLER_BENCH_REQUESTS sets the trace
// length (default 2,000,000), TRAWLER_BENCH_SIZES the sizes. One op is a
// full run; use -benchtime=1x.
func BenchmarkStudy(b *testing.B) {
	n := 2_000_000
	if v, err := strconv.Atoi(os.Getenv("TRAWLER_BENCH_REQUESTS")); err == nil && v > 0 {
		n = v
	}
	fps := linkstream.New(linkstream.Options{Seed: 1}).Fingerprints(n)
	sizeList := "2^4..2^19"
	if v := os.Getenv("TRAWLER_BENCH_SIZES"); v != "" {
		sizeList = v
	}
	sizes, err := ParseSizes(sizeList)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	tr := sim.NewTrace(fps)
	b.Logf("%d requests, %d distinct, prepared in %s", tr.Len(), tr.Distinct(), time.Since(start))
	perRequest := func(b *testing.B, sims int) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*sims), "ns/request/sim")
	}
	for _, p := range sim.Policies {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if _, err := Run("bench", tr, []string{p}, sizes, 1); err != nil {
					b.Fatal(err)
				}
			}
			perRequest(b, len(sizes))
		})
	}
	// The baseline of the one-pass LRU: the LRU cache replayed per size.
	b.Run("lru-replay", func(b *testing.B) {
		for b.Loop() {
			for _, size := range sizes {
				if _, err := tr.Hits(cache.LRU, size); err != nil {
					b.Fatal(err)
				}
			}
		}
		perRequest(b, len(sizes))
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if _, err := Run("bench", tr, sim.Policies, sizes, 0); err != nil {
				b.Fatal(err)
			}
		}
		perRequest(b, len(sim.Policies)*len(sizes))
	})
}
