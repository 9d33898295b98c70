package app

import (
	"bytes"
	"log/slog"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/config"
)

// The heap's limit is the target less the mapped files, at least half the
// target.
func TestGoLimit(t *testing.T) {
	for _, c := range []struct{ target, files, want int64 }{
		{300 << 20, 60 << 20, 240 << 20},
		{300 << 20, 0, 240 << 20},
		{300 << 20, 20 << 20, 240 << 20},
		{300 << 20, 80 << 20, 220 << 20},
		{300 << 20, 200 << 20, 150 << 20},
	} {
		if got := goLimit(c.target, c.files); got != c.want {
			t.Errorf("goLimit(%d, %d) = %d, want %d", c.target, c.files, got, c.want)
		}
	}
}

// A collector held near the limit at the cost of the CPU is warned about,
// once in gcWarnEvery, in one line that names the flag; a cheap one is not.
func TestMemoryHolderWarnsWhenTheCollectorTakesTheCPU(t *testing.T) {
	var logs bytes.Buffer
	var limit int64
	var gcShare float64
	start := time.Unix(1_000_000, 0)
	var gc, used float64
	last := start
	h := &memoryHolder{
		target: 300 << 20, flag: "--memory-limit",
		log:      slog.New(slog.NewTextHandler(&logs, nil)),
		fileRSS:  func() int64 { return 60 << 20 },
		setLimit: func(n int64) { limit = n },
		read: func(now time.Time) gcSample {
			d := now.Sub(last).Seconds() * 2 // two busy CPUs
			last = now
			used += d
			gc += d * gcShare
			return gcSample{at: now, gc: gc, used: used, live: 250 << 20}
		},
	}
	at := func(d time.Duration) time.Time { return start.Add(d) }
	clock := time.Duration(0)
	run := func(share float64, d time.Duration) {
		gcShare = share
		for end := clock + d; clock < end; clock += memoryEvery {
			h.step(at(clock))
		}
	}
	run(0.1, time.Minute)
	if limit != 240<<20 {
		t.Errorf("limit %d, want the target less the files: %d", limit, 240<<20)
	}
	if logs.Len() > 0 {
		t.Fatalf("a collector at 10%% of the CPU warned: %s", logs.String())
	}
	run(0.5, 2*time.Minute)
	if n := strings.Count(logs.String(), "raise --memory-limit"); n != 1 {
		t.Fatalf("%d warnings over two minutes at 50%%, want 1:\n%s", n, logs.String())
	}
	if !regexp.MustCompile(`near --memory-limit 300MiB took the garbage collector (3[4-9]|[45]\d)% of the CPU over the last 30s \(live heap 250.0 MiB\)`).MatchString(logs.String()) {
		t.Errorf("warning does not say what it cost: %s", logs.String())
	}
	run(0.5, gcWarnEvery)
	if n := strings.Count(logs.String(), "raise --memory-limit"); n != 2 {
		t.Errorf("%d warnings after %s more at 50%%, want 2", n, gcWarnEvery)
	}
}

// HoldMemory sets the runtime's soft limit at once, and stop puts back the
// one before.
func TestHoldMemorySetsTheRuntimeLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	const target = config.Size(300 << 20)
	stop := HoldMemory(target, "--memory-limit", slog.New(slog.DiscardHandler))
	got := debug.SetMemoryLimit(-1)
	stop()
	if got > int64(target) || got < int64(target)/2 || got == old {
		t.Errorf("runtime limit %d for a target of %d (before: %d)", got, target, old)
	}
	if back := debug.SetMemoryLimit(-1); back != old {
		t.Errorf("limit %d after stop, want %d as before", back, old)
	}
}

// GOMEMLIMIT wins over the default, not over a value given.
func TestMemoryTargetLeavesGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := MemoryTarget(DefaultMemoryLimit, false); got != 0 {
		t.Errorf("default with GOMEMLIMIT set: %v, want none", got)
	}
	if got := MemoryTarget(200<<20, true); got != 200<<20 {
		t.Errorf("given with GOMEMLIMIT set: %v", got)
	}
}

// fileRSS reads this process's mapped file pages: some, and less than all.
func TestFileRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc here")
	}
	n := fileRSS()
	if n <= 0 || n > 1<<40 {
		t.Errorf("fileRSS() = %d", n)
	}
}
