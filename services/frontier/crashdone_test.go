package frontier

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// A kill -9 between a host's next task going out (ahead of the step that
// records it) and that step's commit leaves the store with the previous task
// in flight, while the next one was fetched and its done report waits in the
// intake behind the previous one's. After the restart both reports came in
// one batch: the store applies dones before pops, so the second found no
// task, and the step then recorded that very task (same derived ID) as in
// flight, for good: the host stood still until the task's lease ran out
// (TestResumeAfterKill9 hung ~11 minutes, once in ~15 runs). The early
// report must wait until its task is recorded. (Delivered one at a time,
// the reports were fine: the second came while the first one's step was
// pending and waited for it. The other intake in front puts both in one
// batch.)
func TestDoneReportAheadOfItsRecordAfterACrash(t *testing.T) {
	js, names := testbus.Start(t, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	h := &harness{t: t, js: js, names: names}
	run := func(path string) (stop func()) {
		st, err := store.OpenBolt(path)
		if err != nil {
			t.Fatal(err)
		}
		svc := New(Options{JS: js, Names: names, Store: st, Partitions: []int{0}, FetchTimeout: time.Second, MaxAttempts: 3,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- svc.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			st.Close()
		}
	}
	stop := run(path)
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3")
	first, _, ok := h.task(5 * time.Second)
	if !ok {
		t.Fatal("no first task")
	}
	stop()
	// The state a crash leaves: the first task in flight, the second not
	// yet recorded.
	crashed := filepath.Join(dir, "crashed.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crashed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	stop = run(path)
	h.done(first, false)
	second, _, ok := h.task(5 * time.Second)
	if !ok || second.URL != "http://a.example/2" {
		t.Fatalf("second task: %+v, %v", second, ok)
	}
	stop()
	// What the lost step's intake was, still unacked, and the second
	// task's report, fetched before the kill: in stream order.
	for i := range 40 { // other intake before them: one batch holds them all
		h.enqueue(fmt.Sprintf("http://b%d.example/", i))
	}
	h.done(first, false)
	h.done(second, false)
	stop = run(crashed)
	defer stop()
	var third messages.FetchTask
	for third.URL != "http://a.example/3" {
		if third, _, ok = h.task(5 * time.Second); !ok {
			t.Fatal("after the restart, the host's third task never came")
		}
	}
}

// A done report the restart scan found that no task will ever match (its
// host has nothing queued or in flight: a stale report) is applied at once,
// not held for the minute an early report may wait: the crawl's end would
// wait for it.
func TestStaleDoneReportAtLoadIsNotHeld(t *testing.T) {
	h := start(t, Options{})
	h.enqueue("http://a.example/1")
	first, _, ok := h.task(5 * time.Second)
	if !ok {
		t.Fatal("no task")
	}
	h.done(first, false)
	testutil.Eventually(t, 5*time.Second, "the host to be done", func() bool { return h.svc.Stats.Done.Load() == 1 })
	h.stop()
	stale := first
	stale.ID = "p0-0123456789abcdef" // a task of the host that is not in flight
	h.done(stale, false)
	svc := New(h.svc.o)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)
	testutil.Eventually(t, 5*time.Second, "the frontier stream to be drained", func() bool {
		st, err := h.js.Stream(context.Background(), h.names.StreamFrontier())
		if err != nil {
			return false
		}
		_, msgs, err := bus.WorkMsgs(context.Background(), st, h.names.Keeper(h.names.StreamFrontier()))
		return err == nil && msgs == 0
	})
}
