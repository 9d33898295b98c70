package cache

import "container/heap"

// Trace simulation: replay a sequence of fingerprint requests against a
// policy, and the two bounds of the paper, INFINITE and MIN. They are for
// benchmarks and capacity planning, not for the crawl path.

// Replay feeds trace to c as the dedup service would (Lookup, and Insert on a
// miss) and returns the number of hits.
func Replay(c Cache, trace []uint64) (hits int) {
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
	next := nextUse(trace)
	h := newMinCache(min(size, len(trace)))
	for t, fp := range trace {
		if s, ok := h.slot[fp]; ok {
			hits++
			h.reschedule(s, next[t])
			continue
		}
		switch {
		case len(h.order) < size:
			h.add(fp, next[t])
		case next[t] < h.when[h.order[0]]:
			h.replaceFarthest(fp, next[t])
		}
	}
	return hits
}

// nextUse returns, for each position t, the position of the next request for
// trace[t], or len(trace) when there is none: the trace read backwards with a
// table of last-seen positions, as in the paper.
func nextUse(trace []uint64) []int32 {
	next := make([]int32, len(trace))
	last := make(map[uint64]int32)
	for t := len(trace) - 1; t >= 0; t-- {
		fp := trace[t]
		if n, ok := last[fp]; ok {
			next[t] = n
		} else {
			next[t] = int32(len(trace))
		}
		last[fp] = int32(t)
	}
	return next
}

// minCache is MIN's cache: entries live in fixed slots (fp, when = next
// request) and order is a max-heap of slots by when, with pos the inverse so
// that an entry's key can change in place.
type minCache struct {
	slot  map[uint64]int32
	fps   []uint64
	when  []int32
	order []int32 // heap of slots, farthest next request first
	pos   []int32 // pos[slot] = index in order
}

func newMinCache(size int) *minCache {
	return &minCache{slot: make(map[uint64]int32, size)}
}

func (h *minCache) add(fp uint64, when int32) {
	s := int32(len(h.fps))
	h.slot[fp] = s
	h.fps = append(h.fps, fp)
	h.when = append(h.when, when)
	h.pos = append(h.pos, int32(len(h.order)))
	heap.Push(h, s)
}

func (h *minCache) reschedule(s, when int32) {
	h.when[s] = when
	heap.Fix(h, int(h.pos[s]))
}

// replaceFarthest evicts the entry requested farthest in the future and puts
// fp in its slot.
func (h *minCache) replaceFarthest(fp uint64, when int32) {
	s := h.order[0]
	delete(h.slot, h.fps[s])
	h.slot[fp] = s
	h.fps[s] = fp
	h.reschedule(s, when)
}

// heap.Interface over order.
func (h *minCache) Len() int           { return len(h.order) }
func (h *minCache) Less(i, j int) bool { return h.when[h.order[i]] > h.when[h.order[j]] }
func (h *minCache) Swap(i, j int) {
	h.order[i], h.order[j] = h.order[j], h.order[i]
	h.pos[h.order[i]] = int32(i)
	h.pos[h.order[j]] = int32(j)
}
func (h *minCache) Push(x any) { h.order = append(h.order, x.(int32)) }
func (h *minCache) Pop() any {
	s := h.order[len(h.order)-1]
	h.order = h.order[:len(h.order)-1]
	return s
}
