package dedup

import (
	"testing"
	"time"
)

// The Bloom filter's fill is counted at most once per fillEvery: a count
// reads the whole bit array under the partition's lock, and the metrics ask
// every second. Within the interval the last count stands; after it, the
// filter is counted again. A filter nothing was added to is not counted: the
// count would fault in every page of its fresh bit array under the lock at
// a crawl's start.
func TestBloomFillIsCountedAtMostOncePerInterval(t *testing.T) {
	l := newLayers(nil, 10_000, 0.01)
	t0 := time.Unix(1_800_000_000, 0)
	if r, _, _ := l.fill(t0); r != 0 || !l.filledAt.IsZero() {
		t.Fatalf("empty filter: filled %v, counted at %v; want 0, not counted", r, l.filledAt)
	}
	add := func(from, to uint64) {
		var fresh []uint64
		for fp := from; fp <= to; fp++ {
			fresh = append(fresh, fp*0x9E3779B97F4A7C15)
		}
		l.learn(nil, fresh)
	}
	add(1, 100)
	small, _, _ := l.fill(t0)
	if small <= 0 || small > 0.02 {
		t.Fatalf("100 of 10,000: fill %v, want a few thousandths", small)
	}
	add(101, 5_000)
	if r, _, _ := l.fill(t0.Add(fillEvery - time.Millisecond)); r != small {
		t.Errorf("within the interval: fill %v, want the last count's %v", r, small)
	}
	r, f, _ := l.fill(t0.Add(fillEvery))
	// 5,000 of the 10,000 expected: a filter sized for 1 % at 10,000 is
	// about 30 % set at half its load.
	if r < 0.2 || r > 0.4 || f <= 0 || f >= 0.01 {
		t.Errorf("after the interval: fill %v, fp rate %v, want about 0.3 and under 1 %%", r, f)
	}
}
