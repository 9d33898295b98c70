package main

import "testing"

// The heap profiler is off unless GODEBUG asks for it.
func TestMemProfileRate(t *testing.T) {
	for _, c := range []struct {
		godebug string
		want    int
	}{
		{"", 0},
		{"gctrace=1", 0},
		{"memprofilerate=1", 512 * 1024},
		{"gctrace=1, memprofilerate=4096", 512 * 1024},
		{"xmemprofilerate=1", 0},
	} {
		if got := memProfileRate(c.godebug, 512*1024); got != c.want {
			t.Errorf("memProfileRate(%q) = %d, want %d", c.godebug, got, c.want)
		}
	}
}
