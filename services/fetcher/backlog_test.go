package fetcher

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
)

// gateOneTask starts b's reads and gate, and sends one task through it.
func gateOneTask(t *testing.T, b *backlog) <-chan jetstream.Msg {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go b.watch(ctx)
	in := make(chan jetstream.Msg, 1)
	in <- taskAt(time.Time{})
	return b.gate(ctx, in)
}

// The gate passes nothing while the count is at the limit, and what waited
// once it falls under it.
func TestBacklogGateHoldsAtTheLimit(t *testing.T) {
	var count atomic.Int64
	count.Store(5)
	b := newBacklog(5, func(context.Context) (int, error) { return int(count.Load()), nil }, 5*time.Millisecond, 0, nil)
	out := gateOneTask(t, b)
	select {
	case <-out:
		t.Fatal("a task passed with the backlog at its limit")
	case <-time.After(100 * time.Millisecond):
	}
	count.Store(4)
	select {
	case <-out:
	case <-time.After(5 * time.Second):
		t.Fatal("the task still waits with the backlog under its limit")
	}
	if b.waits.Load() != 1 || b.waitNS.Load() < int64(50*time.Millisecond) {
		t.Fatalf("waits %d for %v, want 1 of at least 50ms", b.waits.Load(), time.Duration(b.waitNS.Load()))
	}
}

// An unreadable count opens the gate: the crawl goes on without the limit.
func TestBacklogUnreadableOpensTheGate(t *testing.T) {
	b := newBacklog(1, func(context.Context) (int, error) { return 0, fmt.Errorf("no NATS") }, 5*time.Millisecond, 0, nil)
	out := gateOneTask(t, b)
	select {
	case <-out:
	case <-time.After(5 * time.Second):
		t.Fatal("the task waits on a count that cannot be read")
	}
}

// End to end on a real JetStream: with nobody parsing, the fetcher stops
// once the parser's consumer holds the limit's worth of pages (give or take
// the fetches under way), and goes on as they are taken.
func TestFetcherWaitsForTheParser(t *testing.T) {
	var hits atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body>%s</body></html>", r.URL.Path)
	})
	const limit, tasks = 4, 20
	js, names := startFetcher(t, Options{Backlog: limit})
	for i := range tasks {
		publishTask(t, js, names, fmt.Sprint("t", i), fmt.Sprintf("%s/p/%d", srv.URL, i))
	}
	// startFetcher runs 2 workers: at most limit + 2 pages before the gate
	// shuts, and a poll's worth more (a poll every 100 ms, a fetch here is
	// well under a millisecond but each pass through the gate is counted).
	time.Sleep(time.Second)
	if n := hits.Load(); n > limit+2+2 || n < limit {
		t.Fatalf("%d pages fetched with nobody parsing, want about %d (the limit)", n, limit)
	}
	// Parse (take) pages: the fetcher goes on until every task is fetched.
	got := 0
	for deadline := time.Now().Add(30 * time.Second); got < tasks && time.Now().Before(deadline); {
		if testbus.Next(t, js, names.StreamPages(), names.ConsumerParser(), time.Second) != nil {
			got++
		}
	}
	if got != tasks || hits.Load() != tasks {
		t.Fatalf("%d pages taken, %d fetched, want %d of each", got, hits.Load(), tasks)
	}
}
