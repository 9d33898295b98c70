package cache

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// refRandomExpectedHits is RANDOM's exact expected hits: the probability of
// every reachable cache content, carried request by request (a miss in a
// full cache evicts each entry with equal probability).
func refRandomExpectedHits(trace []uint64, size int) float64 {
	key := func(set []uint64) string { return fmt.Sprint(set) }
	states := map[string][]uint64{"[]": nil}
	prob := map[string]float64{"[]": 1}
	hits := 0.0
	for _, fp := range trace {
		nextStates := map[string][]uint64{}
		nextProb := map[string]float64{}
		add := func(set []uint64, p float64) {
			set = slices.Sorted(slices.Values(set))
			k := key(set)
			nextStates[k] = set
			nextProb[k] += p
		}
		for k, set := range states {
			p := prob[k]
			switch {
			case slices.Contains(set, fp):
				hits += p
				add(set, p)
			case len(set) < size:
				add(append(slices.Clone(set), fp), p)
			default:
				for i := range set {
					next := slices.Clone(set)
					next[i] = fp
					add(next, p/float64(len(set)))
				}
			}
		}
		states, prob = nextStates, nextProb
	}
	return hits
}

// TestRandomMatchesExpectation compares RANDOM's mean hits over many seeds
// with the exact expectation: its victims are random, so no single run has a
// reference count. 4,000 runs put the standard error near 0.03 hits.
func TestRandomMatchesExpectation(t *testing.T) {
	for seed := range uint64(4) {
		trace := stream(seed, 14, 6)
		for _, size := range []int{2, 3} {
			want := refRandomExpectedHits(trace, size)
			const runs = 4000
			total := 0
			for run := range uint64(runs) {
				total += replay(newRandom(size, run+1), trace)
			}
			if got := float64(total) / runs; math.Abs(got-want) > 0.15 {
				t.Fatalf("seed %d size %d: mean %.3f hits, expected %.3f", seed, size, got, want)
			}
		}
	}
}
