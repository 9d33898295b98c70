// Package sim is the cache study's simulator (docs/cache-study.md): it
// replays a sequence of fingerprint requests against the dedup service's
// cache policies (pkg/cache) and the paper's two bounds, INFINITE and MIN.
// It is for capacity planning and the study, not for the crawl path. Trace
// (trace.go) prepares a trace once for many simulations; LRUHits (stack.go)
// gives LRU at every size in one pass.
package sim

import "github.com/trawlerhq/trawler/pkg/cache"

// Replay feeds trace to c as the dedup service would (Lookup, and Insert on a
// miss) and returns the number of hits.
func Replay(c cache.Cache, trace []uint64) (hits int) {
	for _, fp := range trace {
		if c.Lookup(fp) {
			hits++
		} else {
			c.Insert(fp)
		}
	}
	return hits
}

// SimulateInfinite returns the hits of a cache that never evicts: every
// request but the first for each fingerprint.
func SimulateInfinite(trace []uint64) (hits int) {
	seen := make(map[uint64]struct{})
	for _, fp := range trace {
		if _, ok := seen[fp]; ok {
			hits++
		} else {
			seen[fp] = struct{}{}
		}
	}
	return hits
}

// SimulateMIN returns the hits of Belady's clairvoyant policy with size
// entries: on a miss in a full cache it evicts the entry whose next request is
// farthest away, or does not cache the missed fingerprint at all when that is
// requested later than every entry (the paper allows not adding an item). No
// policy gets more hits on this trace.
func SimulateMIN(trace []uint64, size int) (hits int) {
	if size < 1 {
		return 0
	}
	return NewTrace(trace).minHits(min(size, cache.MaxSize))
}
