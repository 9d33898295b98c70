package app

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/prometheus/procfs"

	"github.com/trawlerhq/trawler/internal/config"
)

// DefaultMemoryLimit is run's --memory-limit: a 100,000-page crawl at full
// speed peaked at 346-420 MiB without it (docs/operations.md).
const DefaultMemoryLimit = config.Size(300 << 20)

// MemoryTarget is the --memory-limit to hold: the flag's value, unless it
// was left at its default and GOMEMLIMIT is set, which then wins.
func MemoryTarget(v config.Size, explicit bool) config.Size {
	if !explicit && os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	return v
}

// HoldMemory keeps the process's resident memory near target bytes until
// stop is called, which puts back the limit before (`trawler run
// --memory-limit`). Go's soft memory limit is set to the target less the
// file pages the process maps (its binary, bbolt's map of the store), which
// the collector cannot free, re-read every few seconds.
// Near the limit the collector runs more often instead of the heap growing
// (an allocation never fails for it); when that takes the collector more
// than a third of the process's CPU, a warning says so and what to do.
func HoldMemory(target config.Size, flag string, log *slog.Logger) (stop func()) {
	h := &memoryHolder{target: target, flag: flag, log: log, fileRSS: fileRSS, read: readGC, setLimit: setMemoryLimit}
	before := debug.SetMemoryLimit(-1)
	h.step(time.Now())
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(memoryEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				h.step(now)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
		debug.SetMemoryLimit(before)
	}
}

const (
	memoryEvery = 5 * time.Second
	// gcWindow is what the collector's share of the CPU is judged over;
	// past gcWarnShare in it, a warning, at most once per gcWarnEvery.
	gcWindow    = 30 * time.Second
	gcWarnShare = 1.0 / 3
	gcWarnEvery = 10 * time.Minute
)

// gcSample is the collector's CPU time and the process's, as the runtime
// counts them, and the live heap.
type gcSample struct {
	at       time.Time
	gc, used float64 // CPU seconds since the start
	live     uint64
}

type memoryHolder struct {
	target   config.Size
	flag     string
	log      *slog.Logger
	fileRSS  func() int64
	read     func(time.Time) gcSample
	setLimit func(int64)

	samples []gcSample // the last gcWindow's
	warned  time.Time
}

// goLimit is the heap's share of target: what the mapped files leave, but
// at least half of it (a store mapped past that cannot be held in target by
// the collector; the warning then tells). A fifth of target is kept for the
// files from the start: the binary's pages and bbolt's map come in over a
// crawl's first seconds (60 MiB of `run`'s RSS), faster than they are
// re-read, while the heap is already growing.
func goLimit(target, files int64) int64 { return max(target-max(files, target/5), target/2) }

func (h *memoryHolder) step(now time.Time) {
	h.setLimit(goLimit(int64(h.target), h.fileRSS()))
	s := h.read(now)
	h.samples = append(h.samples, s)
	for len(h.samples) > 1 && now.Sub(h.samples[0].at) > gcWindow {
		h.samples = h.samples[1:]
	}
	first := h.samples[0]
	if now.Sub(first.at) < gcWindow-memoryEvery/2 || s.used <= first.used {
		return
	}
	share := (s.gc - first.gc) / (s.used - first.used)
	if share < gcWarnShare || (!h.warned.IsZero() && now.Sub(h.warned) < gcWarnEvery) {
		return
	}
	h.warned = now
	h.log.Warn(fmt.Sprintf("memory: keeping the process near %s %s took the garbage collector %.0f%% of the CPU over the last %s (live heap %s): raise %s, or set it to 0 to lift it",
		h.flag, h.target, 100*share, gcWindow, HumanBytes(float64(s.live)), h.flag))
}

func setMemoryLimit(n int64) { debug.SetMemoryLimit(n) }

// readGC reads the runtime's CPU estimates: the collector's (its
// background workers and the assists it charges allocating goroutines) and
// the process's, idle time left out.
func readGC(now time.Time) gcSample {
	ms := []metrics.Sample{
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/total:cpu-seconds"},
		{Name: "/cpu/classes/idle:cpu-seconds"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(ms)
	f := func(i int) float64 {
		if ms[i].Value.Kind() != metrics.KindFloat64 {
			return 0
		}
		return ms[i].Value.Float64()
	}
	s := gcSample{at: now, gc: f(0), used: f(1) - f(2)}
	if ms[3].Value.Kind() == metrics.KindUint64 {
		s.live = ms[3].Value.Uint64()
	}
	return s
}

// fileRSS is the resident file and shared pages of this process (Linux;
// 0 where /proc is not there).
func fileRSS() int64 {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0
	}
	return int64(st.RssFile + st.RssShmem)
}
