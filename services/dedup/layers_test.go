package dedup

import (
	"testing"
	"time"
)

// The Bloom filter's fill is counted at most once per fillEvery: a count
// reads the whole bit array under the partition's lock, and the metrics ask
// every second. Within the interval the last count stands; after it, the
// filter is counted again.
func TestBloomFillIsCountedAtMostOncePerInterval(t *testing.T) {
	l := newLayers(nil, 10_000, 0.01)
	t0 := time.Unix(1_800_000_000, 0)
	if r, _, _ := l.fill(t0); r != 0 {
		t.Fatalf("empty filter filled %v", r)
	}
	var buf [8]byte
	for fp := uint64(1); fp <= 5_000; fp++ {
		l.bloom.Add(fpBytes(&buf, fp*0x9E3779B97F4A7C15))
	}
	if r, f, _ := l.fill(t0.Add(fillEvery - time.Millisecond)); r != 0 || f != 0 {
		t.Errorf("within the interval: fill %v, fp rate %v, want the last count's 0", r, f)
	}
	r, f, _ := l.fill(t0.Add(fillEvery))
	// 5,000 of the 10,000 expected: a filter sized for 1 % at 10,000 is
	// about 30 % set at half its load.
	if r < 0.2 || r > 0.4 || f <= 0 || f >= 0.01 {
		t.Errorf("after the interval: fill %v, fp rate %v, want about 0.3 and under 1 %%", r, f)
	}
}
