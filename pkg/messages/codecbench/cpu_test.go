package codecbench

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU the process has used (user and system, every thread,
// the garbage collector's included). On a machine shared with other work,
// CPU per op moves far less than wall time per op, and it is what the
// profile of a crawl counts.
func cpuTime() time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// loop runs op as b.Loop does and reports cpu-ns/op too.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	n := 0
	start := cpuTime()
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}
