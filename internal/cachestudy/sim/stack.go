package sim

import (
	"fmt"
	"slices"

	"github.com/trawlerhq/trawler/pkg/cache"
)

// LRU is a stack algorithm (Mattson et al., 1970): a cache of k entries
// holds the k most recently used fingerprints, so a request hits every LRU
// cache larger than its stack distance, the number of distinct fingerprints
// requested since its previous request. One pass computing every distance
// gives LRU's hits at all sizes at once.
//
// The distance is a count of "last use" marks: each fingerprint marks the
// time slot of its latest request, and the distance of a request is the
// number of marks after the slot of the previous one, a prefix sum in a
// Fenwick tree. Slots are renumbered (compacted) when they run out, so memory
// is a few words per distinct fingerprint, not per request.

// LRUHits returns LRU's hits for each of sizes (in any order) in one pass
// over the trace: equal to replaying the trace through New("lru", size) for
// each size, in O(n log d) for n requests and d distinct fingerprints.
func (t *Trace) LRUHits(sizes []int) ([]int, error) {
	largest := 0
	for _, s := range sizes {
		if s < 1 || s > cache.MaxSize {
			return nil, fmt.Errorf("sim: size %d out of range [1, %d]", s, cache.MaxSize)
		}
		largest = max(largest, s)
	}
	hist := t.stackDistances(largest)
	// cum[k] = requests with distance < k = hits of a cache of k entries.
	out := make([]int, len(sizes))
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return sizes[a] - sizes[b] })
	sum, d := 0, 0
	for _, i := range order {
		for ; d < sizes[i]; d++ {
			sum += hist[d]
		}
		out[i] = sum
	}
	return out, nil
}

// stackDistances returns hist[d] = requests at stack distance d (0 = the same
// fingerprint as the previous request), for d < limit; first requests and
// longer distances are not counted.
func (t *Trace) stackDistances(limit int) []int {
	hist := make([]int, limit)
	capSlots := max(2*t.distinct, 1024)
	s := stack{
		tree:  make([]int32, capSlots+1),
		owner: make([]int32, capSlots),
		slot:  make([]int32, t.distinct),
	}
	for i := range s.slot {
		s.slot[i] = -1
	}
	for _, id := range t.ids {
		if s.used == capSlots {
			s.compact()
		}
		if old := s.slot[id]; old >= 0 {
			// marks after old = all marks minus those up to old.
			d := s.live - s.prefix(int(old)+1)
			if d < limit {
				hist[d]++
			}
			s.add(int(old), -1)
			s.owner[old] = -1
			s.live--
		}
		s.slot[id] = int32(s.used)
		s.owner[s.used] = id
		s.add(s.used, 1)
		s.used++
		s.live++
	}
	return hist
}

// stack is the state of stackDistances: a Fenwick tree of marks over slots.
type stack struct {
	tree  []int32 // 1-based Fenwick tree over slots
	owner []int32 // owner[slot] = id whose last use it marks, -1 if unmarked
	slot  []int32 // slot[id] = slot of id's last use, -1 before its first
	used  int     // slots handed out since the last compaction
	live  int     // marks set = distinct fingerprints seen so far
}

func (s *stack) add(i, v int) {
	for i++; i < len(s.tree); i += i & -i {
		s.tree[i] += int32(v)
	}
}

// prefix returns the marks in slots [0, n).
func (s *stack) prefix(n int) int {
	sum := int32(0)
	for ; n > 0; n -= n & -n {
		sum += s.tree[n]
	}
	return int(sum)
}

// compact moves the marks to slots 0..live-1, keeping their order, and
// rebuilds the tree in linear time. live <= distinct <= half the slots, so
// this runs at most once per distinct requests: amortized O(1).
func (s *stack) compact() {
	n := 0
	for _, id := range s.owner[:s.used] {
		if id >= 0 {
			s.owner[n] = id
			s.slot[id] = int32(n)
			n++
		}
	}
	for i := n; i < len(s.owner); i++ {
		s.owner[i] = -1
	}
	clear(s.tree)
	for i := 1; i < len(s.tree); i++ { // partial sums reach past n
		if i <= n {
			s.tree[i]++
		}
		if j := i + i&-i; j < len(s.tree) {
			s.tree[j] += s.tree[i]
		}
	}
	s.used = n
}
