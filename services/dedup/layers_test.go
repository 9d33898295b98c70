package dedup

import (
	"testing"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
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

// The replica's partitions share one array for their first Bloom filters,
// each its own slice, sized and hashed as a filter of its own would be; a
// partition that runs again gets a new filter, not its old slice, which the
// run before may still hold.
func TestBloomArenaGivesEachPartitionItsSlice(t *testing.T) {
	m, k := bloom.EstimateParameters(300_000, 0.01)
	var a bloomArena
	f0, f1 := a.filter(0, 32, m, k), a.filter(1, 32, m, k)
	want := bloom.New(m, k)
	if f0.Cap() != want.Cap() || f0.K() != want.K() {
		t.Fatalf("arena filter m=%d k=%d, want m=%d k=%d", f0.Cap(), f0.K(), want.Cap(), want.K())
	}
	var buf [8]byte
	for fp := uint64(1); fp <= 1000; fp++ {
		f0.Add(fpBytes(&buf, fp*0x9E3779B97F4A7C15))
		want.Add(fpBytes(&buf, fp*0x9E3779B97F4A7C15))
	}
	got, wantWords := f0.BitSet().Words(), want.BitSet().Words()
	if len(got) != len(wantWords) {
		t.Fatalf("%d words, want %d", len(got), len(wantWords))
	}
	for i := range got {
		if got[i] != wantWords[i] {
			t.Fatalf("word %d: %x, want %x (bloom.New's after the same adds)", i, got[i], wantWords[i])
		}
	}
	for fp := uint64(1); fp <= 5000; fp++ {
		b := fpBytes(&buf, fp*0x9E3779B97F4A7C15)
		if f0.Test(b) != want.Test(b) {
			t.Fatalf("fingerprint %d: the arena's filter says %v, bloom.New's %v", fp, f0.Test(b), want.Test(b))
		}
	}
	if f1.BitSet().Count() != 0 {
		t.Errorf("partition 1's filter has %d bits set by partition 0's adds", f1.BitSet().Count())
	}
	again := a.filter(0, 32, m, k)
	if again.BitSet().Count() != 0 || &again.BitSet().Words()[0] == &f0.BitSet().Words()[0] {
		t.Error("partition 0 run again shares its first filter's bits")
	}
}
