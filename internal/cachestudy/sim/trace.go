package sim

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/trawlerhq/trawler/pkg/cache"
)

// Policy names accepted by Trace.Hits besides those of New: the paper's two
// bounds.
const (
	Infinite = "infinite" // never evicts: only first requests miss
	MIN      = "min"      // Belady's clairvoyant policy
)

// Policies lists every policy Trace.Hits simulates, in the paper's order.
var Policies = []string{Infinite, MIN, cache.LRU, cache.Clock, cache.Random, cache.Static}

// Trace is a request sequence prepared once for many simulations: each
// fingerprint numbered densely (so MIN and the LRU stack index arrays, not
// maps), and, made on first use, the next-request times MIN needs and the
// frequency order STATIC is preloaded from. Safe for concurrent use.
type Trace struct {
	fps      []uint64
	ids      []int32 // ids[t] numbers fps[t]; 0..distinct-1 in order of first request
	distinct int

	nextOnce sync.Once
	next     []int32

	freqOnce sync.Once
	byFreq   []uint64 // distinct fingerprints, most frequent first
}

// MaxTraceLen bounds a Trace: positions are int32.
const MaxTraceLen = 1<<31 - 2

// NewTrace prepares fps (kept, not copied) for simulation. It panics beyond
// MaxTraceLen requests; callers with traces from files check first.
func NewTrace(fps []uint64) *Trace {
	if len(fps) > MaxTraceLen {
		panic("sim: trace longer than MaxTraceLen requests")
	}
	num := make(map[uint64]int32)
	ids := make([]int32, len(fps))
	for t, fp := range fps {
		id, ok := num[fp]
		if !ok {
			id = int32(len(num))
			num[fp] = id
		}
		ids[t] = id
	}
	return &Trace{fps: fps, ids: ids, distinct: len(num)}
}

// Len is the number of requests.
func (t *Trace) Len() int { return len(t.fps) }

// Distinct is the number of distinct fingerprints.
func (t *Trace) Distinct() int { return t.distinct }

// Hits simulates one policy ("infinite", "min", "lru", "clock", "random" or
// "static") with room for size fingerprints and returns its hits. The dynamic
// policies replay the trace through the caches the dedup service runs;
// STATIC is preloaded with the trace's size most frequent fingerprints, as in
// the paper, so a member's first request is a hit.
func (t *Trace) Hits(policy string, size int) (int, error) {
	if size < 1 || size > cache.MaxSize {
		return 0, fmt.Errorf("sim: size %d out of range [1, %d]", size, cache.MaxSize)
	}
	switch strings.ToLower(policy) {
	case Infinite:
		return len(t.fps) - t.distinct, nil
	case MIN:
		return t.minHits(size), nil
	case cache.Static:
		top := t.frequent()
		c := cache.NewStatic(top[:min(size, len(top))])
		hits := 0
		for _, fp := range t.fps {
			if c.Lookup(fp) {
				hits++
			}
		}
		return hits, nil
	}
	c, err := cache.New(policy, size)
	if err != nil {
		return 0, err
	}
	return Replay(c, t.fps), nil
}

// frequent returns the distinct fingerprints, most frequent first, ties by
// ascending fingerprint (as WriteStatic orders them).
func (t *Trace) frequent() []uint64 {
	t.freqOnce.Do(func() {
		count := make([]int32, t.distinct)
		fpOf := make([]uint64, t.distinct)
		for i, id := range t.ids {
			count[id]++
			fpOf[id] = t.fps[i]
		}
		order := make([]int32, t.distinct)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int {
			if count[a] != count[b] {
				return int(count[b]) - int(count[a])
			}
			switch {
			case fpOf[a] < fpOf[b]:
				return -1
			case fpOf[a] > fpOf[b]:
				return 1
			}
			return 0
		})
		t.byFreq = make([]uint64, len(order))
		for i, id := range order {
			t.byFreq[i] = fpOf[id]
		}
	})
	return t.byFreq
}

// nextUse is, for each position, the position of the next request for the
// same fingerprint, or Len when there is none: one backward pass, as in the
// paper.
func (t *Trace) nextUse() []int32 {
	t.nextOnce.Do(func() {
		last := make([]int32, t.distinct)
		for i := range last {
			last[i] = int32(len(t.ids))
		}
		t.next = make([]int32, len(t.ids))
		for i := len(t.ids) - 1; i >= 0; i-- {
			id := t.ids[i]
			t.next[i] = last[id]
			last[id] = int32(i)
		}
	})
	return t.next
}

// minHits is SimulateMIN over dense ids: a max-heap of cached ids keyed by
// their next request, with pos[id] the id's heap index (-1: not cached). On a
// miss in a full cache the farthest entry is replaced, unless the missed
// fingerprint is requested later than all of them (then it is not cached).
func (t *Trace) minHits(size int) int {
	next := t.nextUse()
	size = min(size, t.distinct)
	pos := make([]int32, t.distinct)
	for i := range pos {
		pos[i] = -1
	}
	when := make([]int32, t.distinct)
	heap := make([]int32, 0, size)
	hits := 0
	for i, id := range t.ids {
		nx := next[i]
		if p := pos[id]; p >= 0 {
			hits++
			when[id] = nx // later than before: the entry moves towards the root
			siftUp(heap, pos, when, int(p))
			continue
		}
		switch {
		case len(heap) < size:
			when[id] = nx
			pos[id] = int32(len(heap))
			heap = append(heap, id)
			siftUp(heap, pos, when, len(heap)-1)
		case nx < when[heap[0]]:
			pos[heap[0]] = -1
			when[id] = nx
			heap[0], pos[id] = id, 0
			siftDown(heap, pos, when, 0)
		}
	}
	return hits
}

func siftUp(heap, pos, when []int32, i int) {
	id := heap[i]
	for i > 0 {
		parent := (i - 1) / 2
		if when[heap[parent]] >= when[id] {
			break
		}
		heap[i] = heap[parent]
		pos[heap[i]] = int32(i)
		i = parent
	}
	heap[i], pos[id] = id, int32(i)
}

func siftDown(heap, pos, when []int32, i int) {
	id := heap[i]
	for {
		c := 2*i + 1
		if c >= len(heap) {
			break
		}
		if c+1 < len(heap) && when[heap[c+1]] > when[heap[c]] {
			c++
		}
		if when[heap[c]] <= when[id] {
			break
		}
		heap[i] = heap[c]
		pos[heap[i]] = int32(i)
		i = c
	}
	heap[i], pos[id] = id, int32(i)
}
