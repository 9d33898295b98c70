package app

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The garbage collector's target, unless the GOGC environment variable says
// otherwise, follows the live heap. Every service churns through
// short-lived buffers (page bodies, JSON, link lists): at Go's default of
// 100 a parser with a small live heap collected every few pages, spent a
// quarter of its CPU in the collector, and the distributed benchmark ran
// 20-30 % slower (docs/benchmarks.md). So while the live heap is small the
// target is maxGCPercent; as it grows the heap may exceed it by at most
// gcHeadroom however large the live heap (but at least minGCPercent: a heap
// of gigabytes is collected once a quarter of it was allocated, not
// continually). A fixed 400 would multiply by five whatever a process keeps: the all-in-one mode's embedded NATS server holds hundreds of MB of
// message IDs on a long crawl, which took it to 3 GiB. The headroom was
// 512 MiB until the all-in-one mode was measured with --out on a web found
// by discovery: a live heap of ~190 MB (most of it the embedded NATS
// server's block buffers) ran at a 690 MB goal and a 750-790 MB peak RSS;
// 128 MiB gave 486 MB at the same pages per CPU-second (collections stay
// rare: a cycle marks the live heap in ~40 ms, every second or two). The
// floor was Go's 100 until the fetchers were held to the parser's pace
// (--fetch-backlog): the all-in-one's live heap then sits at 120-160 MB
// on a 100,000-page crawl, and 100 % of it on top took RSS from ~300 MiB
// at the start to ~450 MiB; the live heap plus 128 MiB keeps it flat.
// The headroom is that much only once the process has allocated 2 GiB
// (gcPercentFor): before, it is a sixteenth of what was allocated, at least
// 16 MiB, so that a short crawl does not pay for a heap it never needed.
const (
	maxGCPercent = 400
	minGCPercent = 25
	gcHeadroom   = 128 << 20
	// The headroom starts at minHeadroom and grows with what the process
	// has allocated, by 1/allocsPerHeadroom of it, up to gcHeadroom.
	minHeadroom       = 16 << 20
	allocsPerHeadroom = 16
	// startGCPercent holds until the live heap is first read.
	startGCPercent = 100
)

// gcPercentFor is the collector's target for a live heap of live bytes in
// a process that has allocated allocated bytes so far, rounded down (to a
// multiple of 25, or of 5 under 100) so that it changes seldom.
//
// Why the headroom grows with the allocations: every byte of headroom is a
// page the kernel faults in once, when the heap first grows into it, and
// the collections it saves are those of the bytes allocated. A one-host
// crawl of 600 pages (a second, ~350 MB allocated, a live heap of ~20 MB)
// ran at 400 % to a 100 MiB heap: 20,000 page faults, 16 % of its CPU on
// these machines; at 50 % 8,000 and a fifth less CPU. A long crawl, or a
// parser allocating fast, reaches the full headroom within seconds, and
// the number of collections grows with the logarithm of the allocations,
// not linearly.
func gcPercentFor(live, allocated uint64) int {
	if live == 0 {
		return startGCPercent
	}
	headroom := min(max(allocated/allocsPerHeadroom, minHeadroom), gcHeadroom)
	p := min(headroom*100/live, maxGCPercent)
	step := uint64(25)
	if p < 100 {
		step = 5
	}
	return max(int(p/step*step), minGCPercent)
}

// TuneGC makes the collector's target follow the live heap (gcPercentFor)
// for the life of the process, unless GOGC is set in the environment; it
// reports whether it did. GOMEMLIMIT applies either way.
func TuneGC() bool {
	if os.Getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(startGCPercent)
	go followLiveHeap(startGCPercent, 100*time.Millisecond)
	return true
}

// followLiveHeap re-reads the live heap after each collection and adjusts
// the target when gcPercentFor moves.
func followLiveHeap(current int, every time.Duration) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	var cycles uint64
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		metrics.Read(samples)
		if samples[0].Value.Kind() != metrics.KindUint64 || samples[1].Value.Uint64() == cycles {
			continue
		}
		cycles = samples[1].Value.Uint64()
		if p := gcPercentFor(samples[0].Value.Uint64(), samples[2].Value.Uint64()); p != current {
			debug.SetGCPercent(p)
			current = p
		}
	}
}
