package sim

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/pkg/cache"
)

// Brute-force references: the obvious algorithm on slices, quadratic and
// independent of the implementations under test.

func refInfiniteHits(trace []uint64) int {
	var seen []uint64
	hits := 0
	for _, fp := range trace {
		if slices.Contains(seen, fp) {
			hits++
		} else {
			seen = append(seen, fp)
		}
	}
	return hits
}

func refLRUHits(trace []uint64, size int) int {
	r := &refLRU{size: size}
	hits := 0
	for _, fp := range trace {
		if r.access(fp) {
			hits++
		}
	}
	return hits
}

// refClockHits is CLOCK as the paper states it: a circular face of entries
// with mark bits; a hit marks; a miss with room appends unmarked; a miss in a
// full face sweeps the hand, clearing marks, to the first unmarked entry,
// replaces it and steps past it.
func refClockHits(trace []uint64, size int) int {
	type entry struct {
		fp   uint64
		mark bool
	}
	var face []entry
	hand, hits := 0, 0
	for _, fp := range trace {
		i := slices.IndexFunc(face, func(e entry) bool { return e.fp == fp })
		if i >= 0 {
			face[i].mark = true
			hits++
			continue
		}
		if len(face) < size {
			face = append(face, entry{fp: fp})
			continue
		}
		for face[hand].mark {
			face[hand].mark = false
			hand = (hand + 1) % size
		}
		face[hand] = entry{fp: fp}
		hand = (hand + 1) % size
	}
	return hits
}

// refStaticHits preloads the size most frequent fingerprints (ties by the
// smaller fingerprint) and counts requests for them.
func refStaticHits(trace []uint64, size int) int {
	count := map[uint64]int{}
	for _, fp := range trace {
		count[fp]++
	}
	keys := slices.SortedFunc(maps.Keys(count), func(a, b uint64) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	keys = keys[:min(size, len(keys))]
	hits := 0
	for _, fp := range trace {
		if slices.Contains(keys, fp) {
			hits++
		}
	}
	return hits
}

func mustHits(t *testing.T, tr *Trace, policy string, size int) int {
	t.Helper()
	h, err := tr.Hits(policy, size)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPoliciesMatchBruteForce checks the exact hit (and so miss) count of
// every policy against its brute-force reference on small random traces.
func TestPoliciesMatchBruteForce(t *testing.T) {
	for seed := range uint64(30) {
		trace := stream(seed, 400, 40)
		tr := NewTrace(trace)
		for _, size := range []int{1, 2, 3, 5, 8, 13, 40, 100} {
			for policy, want := range map[string]int{
				Infinite:     refInfiniteHits(trace),
				cache.LRU:    refLRUHits(trace, size),
				cache.Clock:  refClockHits(trace, size),
				cache.Static: refStaticHits(trace, size),
			} {
				if got := mustHits(t, tr, policy, size); got != want {
					t.Fatalf("seed %d size %d %s: %d hits, reference %d", seed, size, policy, got, want)
				}
			}
		}
	}
	// MIN against exhaustive search: tiny traces only.
	for seed := range uint64(40) {
		trace := stream(seed+100, 12, 6)
		tr := NewTrace(trace)
		for size := 1; size <= 3; size++ {
			if got, want := mustHits(t, tr, MIN, size), bestHits(trace, size, nil); got != want {
				t.Fatalf("seed %d size %d: MIN %d, exhaustive optimum %d", seed, size, got, want)
			}
		}
	}
}

// TestMINNeverWorse is the property: on any trace, no dynamic policy gets
// more hits than MIN, MIN gets no more than INFINITE, and STATIC only beats
// MIN by what its free preloading gives (the paper's accounting artifact):
// charged a miss per preloaded entry, it never does.
func TestMINNeverWorse(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for seed := range uint64(60) {
		n, u := 50+r.IntN(3000), 2+r.IntN(500)
		trace := stream(seed, n, u)
		if seed%3 == 0 { // scans: a loop over more items than fit
			for i := range trace {
				trace[i] = uint64(i % u)
			}
		}
		tr := NewTrace(trace)
		inf := mustHits(t, tr, Infinite, 1)
		for _, size := range []int{1, 2, 4, 16, 64, 256, 1024} {
			m := mustHits(t, tr, MIN, size)
			if m > inf {
				t.Fatalf("seed %d size %d: MIN %d > INFINITE %d", seed, size, m, inf)
			}
			for _, policy := range []string{cache.LRU, cache.Clock, cache.Random} {
				if h := mustHits(t, tr, policy, size); h > m {
					t.Fatalf("seed %d size %d: %s %d hits > MIN %d", seed, size, policy, h, m)
				}
			}
			loaded := min(size, tr.Distinct())
			if h := mustHits(t, tr, cache.Static, size); h-loaded > m {
				t.Fatalf("seed %d size %d: STATIC %d hits - %d preloaded > MIN %d", seed, size, h, loaded, m)
			}
		}
	}
}

// TestLRUOnePassEqualsPerSize compares the stack-distance pass with replaying
// the LRU cache the dedup service runs, size by size, on traces long enough
// to compact the slots many times.
func TestLRUOnePassEqualsPerSize(t *testing.T) {
	sizes := []int{1, 2, 3, 7, 16, 100, 999, 1000, 1001, 4096, 1 << 16}
	for seed := range uint64(6) {
		trace := stream(seed, 30_000, []int{5, 300, 3000, 20_000, 100, 2000}[seed])
		tr := NewTrace(trace)
		shuffled := slices.Clone(sizes)
		rand.New(rand.NewPCG(seed, 0)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := tr.LRUHits(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		for i, size := range shuffled {
			if want := Replay(mustNew(t, cache.LRU, size), trace); got[i] != want {
				t.Fatalf("seed %d size %d: one pass %d hits, replay %d", seed, size, got[i], want)
			}
		}
	}
	if _, err := NewTrace([]uint64{1}).LRUHits([]int{0}); err == nil {
		t.Fatal("size 0 accepted")
	}
}

func TestTraceHitsErrors(t *testing.T) {
	tr := NewTrace([]uint64{1, 2, 1})
	for _, bad := range []struct {
		policy string
		size   int
	}{{"fifo", 4}, {cache.LRU, 0}, {MIN, -3}, {cache.Static, cache.MaxSize + 1}} {
		if _, err := tr.Hits(bad.policy, bad.size); err == nil {
			t.Errorf("Hits(%q, %d) succeeded", bad.policy, bad.size)
		}
	}
	if h := mustHits(t, tr, strings.ToUpper(Infinite), 1); h != 1 || tr.Len() != 3 || tr.Distinct() != 2 {
		t.Fatalf("INFINITE %d len %d distinct %d", h, tr.Len(), tr.Distinct())
	}
	empty := NewTrace(nil)
	for _, p := range Policies {
		if h := mustHits(t, empty, p, 4); h != 0 {
			t.Fatalf("%s on an empty trace: %d hits", p, h)
		}
	}
}
