// Package cachestudy runs the URL-caching study of Broder, Najork and Wiener
// (WWW 2003, sections 4-6) on a fingerprint trace: every policy at every
// cache size, then the miss-rate table (markdown, CSV), the critical size,
// and the plots of the paper's Figures 2-5 (SVG). `trawler cachesim` is its
// command line; docs/cache-study.md its results.
package cachestudy

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/trawlerhq/trawler/internal/cachestudy/sim"
	"github.com/trawlerhq/trawler/pkg/cache"
)

// Table is the outcome of a study: Hits[policy][i] for Sizes[i].
type Table struct {
	Name     string // the trace, for titles
	Requests int
	Distinct int
	Policies []string
	Sizes    []int
	Hits     map[string][]int
}

// Run simulates every policy at every size on tr, on up to workers
// goroutines (<= 0: GOMAXPROCS): a job per (policy, size), except LRU, one
// stack-distance pass for all sizes.
func Run(name string, tr *sim.Trace, policies []string, sizes []int, workers int) (*Table, error) {
	t := &Table{Name: name, Requests: tr.Len(), Distinct: tr.Distinct(), Policies: policies, Sizes: sizes, Hits: map[string][]int{}}
	type job struct {
		policy string
		i      int // index into sizes; -1: all of them (LRU's one pass)
	}
	var jobs []job
	for _, p := range policies {
		t.Hits[p] = make([]int, len(sizes))
		if p == cache.LRU {
			jobs = append(jobs, job{p, -1})
			continue
		}
		for i := range sizes {
			jobs = append(jobs, job{p, i})
		}
	}
	// Slowest first (MIN), so the tail of the run keeps every worker busy.
	slices.SortStableFunc(jobs, func(a, b job) int { return cost(b.policy) - cost(a.policy) })
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan job)
	)
	for range workers {
		wg.Go(func() {
			for j := range next {
				var hits []int
				var err error
				if j.i < 0 {
					hits, err = tr.LRUHits(sizes)
				} else {
					var h int
					h, err = tr.Hits(j.policy, sizes[j.i])
					hits = []int{h}
				}
				mu.Lock()
				switch {
				case err != nil && firstErr == nil:
					firstErr = err
				case err != nil:
				case j.i < 0:
					t.Hits[j.policy] = hits
				default:
					t.Hits[j.policy][j.i] = hits[0]
				}
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return t, firstErr
}

// MinPartitionCache is the least a partition's cache gets when a replica's
// cache is split (services/dedup uses the same floor).
const MinPartitionCache = 16

// RunSplit simulates the deployment of services/dedup: a cache of each size
// split evenly over partitions (at least MinPartitionCache entries each),
// every partition's cache seeing only its own requests. Hits are summed over
// the partitions, so Sizes are the whole budget (--dedup-cache-size).
func RunSplit(name string, parts map[int][]uint64, partitions int, policies []string, sizes []int, workers int) (*Table, error) {
	t := &Table{Name: name, Policies: policies, Sizes: sizes, Hits: map[string][]int{}}
	for _, p := range policies {
		t.Hits[p] = make([]int, len(sizes))
	}
	per := make([]int, len(sizes))
	for i, s := range sizes {
		per[i] = max(s/max(partitions, 1), MinPartitionCache)
	}
	for _, fps := range parts {
		if len(fps) == 0 {
			continue
		}
		sub, err := Run(name, sim.NewTrace(fps), policies, per, workers)
		if err != nil {
			return nil, err
		}
		t.Requests += sub.Requests
		t.Distinct += sub.Distinct // partitions hold disjoint hosts
		for _, p := range policies {
			for i := range sizes {
				t.Hits[p][i] += sub.Hits[p][i]
			}
		}
	}
	return t, nil
}

func cost(policy string) int {
	switch policy {
	case sim.MIN:
		return 3
	case cache.Clock, cache.Random, cache.LRU: // LRU: one pass, all sizes
		return 2
	case cache.Static:
		return 1
	}
	return 0
}

// MissRate is the share of requests policy missed at Sizes[i].
func (t *Table) MissRate(policy string, i int) float64 {
	if t.Requests == 0 {
		return 0
	}
	return 1 - float64(t.Hits[policy][i])/float64(t.Requests)
}

// Critical is where a policy's miss-rate curve turns: Steepest is the size
// whose doubling (to the next simulated size) lowers the miss rate the most,
// Knee the smallest size within a tenth of the whole improvement of the
// largest size (a larger cache buys little more).
type Critical struct {
	Policy         string
	Steepest, Knee int
	KneeMissRate   float64
}

// CriticalSize finds policy's critical points; sizes must have been
// simulated in increasing order.
func (t *Table) CriticalSize(policy string) (Critical, error) {
	if _, ok := t.Hits[policy]; !ok || len(t.Sizes) < 2 {
		return Critical{}, fmt.Errorf("cachestudy: no %s results over two sizes or more", policy)
	}
	c := Critical{Policy: policy}
	bestDrop := math.Inf(-1)
	for i := 0; i+1 < len(t.Sizes); i++ {
		if drop := t.MissRate(policy, i) - t.MissRate(policy, i+1); drop > bestDrop {
			bestDrop, c.Steepest = drop, t.Sizes[i+1]
		}
	}
	first, last := t.MissRate(policy, 0), t.MissRate(policy, len(t.Sizes)-1)
	for i, s := range t.Sizes {
		if m := t.MissRate(policy, i); m-last <= 0.1*(first-last) {
			c.Knee, c.KneeMissRate = s, m
			break
		}
	}
	return c, nil
}

// ParseSizes reads a size list: comma-separated sizes, each a number, 2^k,
// or a range a..b of powers of two (2^4..2^24 is 16, 32, ..., 2^24).
// The result is sorted and without repeats.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if lo, hi, ok := strings.Cut(part, ".."); ok {
			a, err := parseSize(lo)
			if err != nil {
				return nil, err
			}
			b, err := parseSize(hi)
			if err != nil {
				return nil, err
			}
			if a&(a-1) != 0 || b&(b-1) != 0 || a > b {
				return nil, fmt.Errorf("size range %q: want powers of two, low..high", part)
			}
			for v := a; v <= b; v *= 2 {
				out = append(out, v)
			}
			continue
		}
		v, err := parseSize(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func parseSize(s string) (int, error) {
	s = strings.TrimSpace(s)
	var v int
	if exp, ok := strings.CutPrefix(s, "2^"); ok {
		k, err := strconv.Atoi(exp)
		if err != nil || k < 0 || k > 30 {
			return 0, fmt.Errorf("size %q: want 2^k with k in 0..30", s)
		}
		v = 1 << k
	} else {
		n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
		if err != nil {
			return 0, fmt.Errorf("size %q: want a number or 2^k", s)
		}
		v = n
	}
	if v < 1 || v > cache.MaxSize {
		return 0, fmt.Errorf("size %q out of range [1, %d]", s, cache.MaxSize)
	}
	return v, nil
}

// ParsePolicies reads a comma-separated policy list, in the paper's order.
func ParsePolicies(s string) ([]string, error) {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if !slices.Contains(sim.Policies, p) {
			return nil, fmt.Errorf("policy %q: want one of %s", p, strings.Join(sim.Policies, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		return slices.Index(sim.Policies, a) - slices.Index(sim.Policies, b)
	})
	return out, nil
}
