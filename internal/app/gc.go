package app

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target Trawler's processes run
// with unless the GOGC environment variable says otherwise. Every service
// churns through short-lived buffers (page bodies, JSON, link lists) over a
// small live heap, so Go's default of 100 collects every few pages: at 100
// the parser spent a quarter of its CPU in the collector and the distributed
// crawl benchmark ran 20-30 % slower (docs/benchmarks.md). 400 trades a few
// more MiB of heap per process for that CPU; GOMEMLIMIT still caps the heap
// where memory is tight (docs/deploy.md).
const DefaultGCPercent = 400

// TuneGC applies DefaultGCPercent unless GOGC is set in the environment, and
// returns the percentage in force (-1: collector off by GOGC=off).
func TuneGC() int {
	if os.Getenv("GOGC") != "" {
		p := debug.SetGCPercent(100) // read the value Go took from GOGC...
		debug.SetGCPercent(p)        // ...and put it back
		return p
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}
