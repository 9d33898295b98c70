package sim

import (
	"testing"

	"github.com/trawlerhq/trawler/pkg/cache"
)

// bestHits is the optimum by exhaustive search: on each miss with a full
// cache, try not caching the item and evicting each entry.
func bestHits(trace []uint64, size int, cached []uint64) int {
	if len(trace) == 0 {
		return 0
	}
	fp, rest := trace[0], trace[1:]
	for _, c := range cached {
		if c == fp {
			return 1 + bestHits(rest, size, cached)
		}
	}
	if len(cached) < size {
		return bestHits(rest, size, append(cached[:len(cached):len(cached)], fp))
	}
	best := bestHits(rest, size, cached) // bypass
	for i := range cached {
		next := append([]uint64(nil), cached...)
		next[i] = fp
		best = max(best, bestHits(rest, size, next))
	}
	return best
}

func TestSimulateMINIsOptimal(t *testing.T) {
	for seed := range uint64(40) {
		trace := stream(seed, 11, 5)
		for size := 1; size <= 3; size++ {
			if got, want := SimulateMIN(trace, size), bestHits(trace, size, nil); got != want {
				t.Fatalf("seed %d size %d trace %x: MIN %d hits, optimum %d", seed, size, trace, got, want)
			}
		}
	}
}

// TestBounds checks that on random traces no policy beats MIN, MIN never
// beats INFINITE, and MIN with room for everything equals INFINITE.
func TestBounds(t *testing.T) {
	for seed := range uint64(3) {
		trace := stream(seed, 20_000, 2000)
		inf := SimulateInfinite(trace)
		for _, size := range []int{1, 10, 100, 1000, 5000} {
			m := SimulateMIN(trace, size)
			if m > inf || size >= 2000 && m != inf {
				t.Fatalf("seed %d size %d: MIN %d, INFINITE %d", seed, size, m, inf)
			}
			for _, policy := range dynamic {
				if h := Replay(mustNew(t, policy, size), trace); h > m {
					t.Fatalf("seed %d size %d: %s %d hits > MIN %d", seed, size, policy, h, m)
				}
			}
		}
	}
	if SimulateMIN([]uint64{1, 1}, 0) != 0 || SimulateInfinite(nil) != 0 {
		t.Fatal("degenerate cases")
	}
}

func TestSimulateExamples(t *testing.T) {
	for _, tc := range []struct {
		trace    []uint64
		size     int
		min, inf int
		lru      int
		name     string
	}{
		// Belady's classic: MIN keeps 1 and 2 for their reuse.
		{[]uint64{1, 2, 3, 1, 2, 4, 1, 2}, 2, 4, 4, 0, "LRU thrashes"},
		{[]uint64{1, 1, 1}, 1, 2, 2, 2, "repeats"},
		{[]uint64{1, 2, 1, 3, 1, 4, 1}, 1, 3, 3, 0, "MIN bypasses 2, 3 and 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SimulateMIN(tc.trace, tc.size); got != tc.min {
				t.Errorf("MIN %d, want %d", got, tc.min)
			}
			if got := SimulateInfinite(tc.trace); got != tc.inf {
				t.Errorf("INFINITE %d, want %d", got, tc.inf)
			}
			if got := Replay(mustNew(t, cache.LRU, tc.size), tc.trace); got != tc.lru {
				t.Errorf("LRU %d, want %d", got, tc.lru)
			}
		})
	}
}
