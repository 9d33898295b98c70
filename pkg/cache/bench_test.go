package cache

import (
	"fmt"
	"sync"
	"testing"

	"github.com/trawlerhq/trawler/internal/linkstream"
)

// benchLinks is the length of the benchmark trace: long enough that the
// crawl moves through thousands of hosts (which is what defeats STATIC), short
// enough for the whole hit-rate table to run in well under a minute.
const benchLinks = 4_000_000

var (
	traceOnce sync.Once
	trace     []uint64
	counts    map[uint64]int
)

// benchTrace is the synthetic crawl's link fingerprints with default
// options, and each fingerprint's count (STATIC is preloaded with the most
// frequent, from the same trace, as in the paper).
func benchTrace() ([]uint64, map[uint64]int) {
	traceOnce.Do(func() {
		trace = linkstream.New(linkstream.Options{Seed: 1}).Fingerprints(benchLinks)
		counts = make(map[uint64]int)
		for _, fp := range trace {
			counts[fp]++
		}
	})
	return trace, counts
}

// BenchmarkLookupInsert measures the cost of the dedup path per link: a
// Lookup, and an Insert on a miss. One op is a replay of the whole trace;
// ns/link is the figure to read.
func BenchmarkLookupInsert(b *testing.B) {
	tr, counts := benchTrace()
	for _, size := range []int{50_000, 1_000_000} {
		for _, policy := range []string{Clock, LRU, Random, Static} {
			b.Run(fmt.Sprintf("%s/%d", policy, size), func(b *testing.B) {
				n := 0
				for b.Loop() {
					n++
					b.StopTimer()
					var c Cache
					if policy == Static {
						c = NewStatic(topK(counts, size))
					} else {
						c = mustNew(b, policy, size)
					}
					b.StartTimer()
					replay(c, tr)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*len(tr)), "ns/link")
			})
		}
	}
}
