package app

import (
	"runtime/debug"
	"testing"
)

func TestGCPercentFollowsTheLiveHeap(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{20 * mib, 400}, // a fetcher or parser: the full saving
		{32 * mib, 400}, // headroom 128 MiB = 4 x live
		{50 * mib, 250}, // 256 %, rounded down
		{64 * mib, 200},
		{128 * mib, 100},
		{160 * mib, 80},  // live + 128 MiB, not twice the live heap
		{300 * mib, 40},  // 42 %, rounded down to a multiple of 5
		{3000 * mib, 25}, // a quarter of a large heap at least
	} {
		if got := gcPercentFor(tt.live); got != tt.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tt.live/mib, got, tt.want)
		}
	}
}

func TestTuneGCLeavesAnExplicitGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	t.Setenv("GOGC", "150")
	if TuneGC() {
		t.Fatal("TuneGC tuned although GOGC is set")
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("GC percent after TuneGC = %d, want GOGC's 150", got)
	}
}

func TestTuneGCDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	if !TuneGC() {
		t.Fatal("TuneGC did nothing without GOGC")
	}
	if got := debug.SetGCPercent(maxGCPercent); got != maxGCPercent {
		t.Fatalf("GC percent after TuneGC = %d, want %d (a small test heap)", got, maxGCPercent)
	}
}
