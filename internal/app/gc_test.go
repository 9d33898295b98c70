package app

import (
	"runtime/debug"
	"testing"
)

func TestGCPercentFollowsTheLiveHeap(t *testing.T) {
	const mib = 1 << 20
	const long = 4096 * mib // allocated: the full headroom
	for _, tt := range []struct {
		live, allocated uint64
		want            int
	}{
		{0, 0, startGCPercent},
		{20 * mib, long, 400}, // a fetcher or parser: the full saving
		{32 * mib, long, 400}, // headroom 128 MiB = 4 x live
		{50 * mib, long, 250}, // 256 %, rounded down
		{64 * mib, long, 200},
		{128 * mib, long, 100},
		{160 * mib, long, 80},  // live + 128 MiB, not twice the live heap
		{300 * mib, long, 40},  // 42 %, rounded down to a multiple of 5
		{3000 * mib, long, 25}, // a quarter of a large heap at least
		// A young process: the headroom grows with the allocations.
		{20 * mib, 0, 80},           // 16 MiB at first
		{20 * mib, 350 * mib, 100},  // 350/16 = 21.9 MiB: 109 %, rounded down
		{20 * mib, 1024 * mib, 300}, // 64 MiB: 320 %
		{4 * mib, 0, 400},           // a small service: capped
	} {
		if got := gcPercentFor(tt.live, tt.allocated); got != tt.want {
			t.Errorf("gcPercentFor(%d MiB live, %d MiB allocated) = %d, want %d", tt.live/mib, tt.allocated/mib, got, tt.want)
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
	if got := debug.SetGCPercent(startGCPercent); got != startGCPercent {
		t.Fatalf("GC percent after TuneGC = %d, want %d (until the live heap is read)", got, startGCPercent)
	}
}
