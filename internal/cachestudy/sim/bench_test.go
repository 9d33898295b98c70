package sim

import (
	"fmt"
	"testing"

	"github.com/trawlerhq/trawler/internal/linkstream"
	"github.com/trawlerhq/trawler/pkg/cache"
)

// benchLinks is the length of the benchmark trace: long enough that the
// crawl moves through thousands of hosts (which is what defeats STATIC), short
// enough for the whole hit-rate table to run in well under a minute.
const benchLinks = 4_000_000

var hitRateSizes = []int{1_000, 10_000, 20_000, 50_000, 100_000, 500_000}

// BenchmarkHitRate reports each policy's hit rate on the link stream, with
// MIN and INFINITE as bounds. One op is a replay of the whole trace.
func BenchmarkHitRate(b *testing.B) {
	tr := linkstream.New(linkstream.Options{Seed: 1}).Fingerprints(benchLinks)
	top := NewTrace(tr).frequent()
	policies := map[string]func(size int) int{
		cache.Clock:  func(size int) int { return Replay(mustNew(b, cache.Clock, size), tr) },
		cache.LRU:    func(size int) int { return Replay(mustNew(b, cache.LRU, size), tr) },
		cache.Random: func(size int) int { return Replay(mustNew(b, cache.Random, size), tr) },
		cache.Static: func(size int) int { return Replay(cache.NewStatic(top[:min(size, len(top))]), tr) },
		MIN:          func(size int) int { return SimulateMIN(tr, size) },
		Infinite:     func(int) int { return SimulateInfinite(tr) },
	}
	for _, name := range []string{MIN, cache.Clock, cache.LRU, cache.Random, cache.Static, Infinite} {
		for _, size := range hitRateSizes {
			b.Run(fmt.Sprintf("%s/%d", name, size), func(b *testing.B) {
				var hits int
				for b.Loop() {
					hits = policies[name](size)
				}
				b.ReportMetric(100*float64(hits)/float64(len(tr)), "hit%")
			})
		}
	}
}
