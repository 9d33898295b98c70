//go:build unix

package urlx

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used (user and system, every
// thread: the benchmark and the garbage collector).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
