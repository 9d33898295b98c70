package cache

import (
	"runtime"
	"testing"
)

// TestBytesPerEntry measures heap growth for a full cache of a million
// entries. Expected from the layouts (slots = 4/3 entries): CLOCK 8 + 1/8 +
// 4*4/3 = 13.5, LRU 8 + 8 + 5.3 = 21.5, RANDOM and STATIC (8 + 1/8) * 4/3 =
// 10.8. A Go map of the same fingerprints is logged for reference.
func TestBytesPerEntry(t *testing.T) {
	const n = 1_000_000
	fps := make([]uint64, n)
	for i := range fps {
		fps[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	for _, tc := range []struct {
		policy  string
		ceiling float64
	}{{Clock, 16}, {LRU, 24}, {Random, 12}, {Static, 12}} {
		perEntry := heapPerEntry(n, func() Cache {
			if tc.policy == Static {
				return NewStatic(fps)
			}
			c := mustNew(t, tc.policy, n)
			for _, fp := range fps {
				c.Insert(fp)
			}
			return c
		})
		t.Logf("%-6s %5.1f bytes/entry", tc.policy, perEntry)
		if perEntry > tc.ceiling {
			t.Errorf("%s: %.1f bytes/entry, ceiling %.0f", tc.policy, perEntry, tc.ceiling)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := make(map[uint64]struct{})
	for _, fp := range fps {
		m[fp] = struct{}{}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("map    %5.1f bytes/entry (map[uint64]struct{}, for reference)", float64(after.HeapAlloc-before.HeapAlloc)/n)
	runtime.KeepAlive(m)
}

// heapPerEntry returns the live heap that build's result holds, per entry.
func heapPerEntry(n int, build func() Cache) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if c.Len() != n {
		panic("cache not full")
	}
	runtime.KeepAlive(c)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}
