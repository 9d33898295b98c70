package fetcher

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

func TestClaims(t *testing.T) {
	c := newClaims(2)
	if ok, _ := c.claim("a"); !ok {
		t.Fatal("first claim refused")
	}
	if ok, done := c.claim("a"); ok || done {
		t.Fatalf("claim of a running task = %v, %v; want refused, not done", ok, done)
	}
	c.finish("a", false) // handed back: may run again
	if ok, _ := c.claim("a"); !ok {
		t.Fatal("a handed-back task cannot be claimed again")
	}
	c.finish("a", true)
	if ok, done := c.claim("a"); ok || !done {
		t.Fatalf("claim of a finished task = %v, %v; want refused, done", ok, done)
	}
	for _, id := range []string{"b", "c"} { // evicts a
		c.claim(id)
		c.finish(id, true)
	}
	if ok, _ := c.claim("a"); !ok {
		t.Error("the oldest finished task was not forgotten")
	}
}

// A task delivered twice to one replica (JetStream redelivers it when its
// ack wait runs out while it is still being fetched) is fetched once.
func TestTaskDeliveredTwiceIsFetchedOnce(t *testing.T) {
	var hits atomic.Int32
	// The fetch runs until the second delivery has been seen.
	held := make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-held
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html></html>")
	}))
	defer srv.Close()
	defer release()
	js, names := testbus.Start(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := runFetcher(ctx, js, names, 4, 5*time.Second)
	publishTask(t, js, names, "t1", srv.URL+"/")
	testutil.Eventually(t, 5*time.Second, "the fetch to start", func() bool { return hits.Load() > 0 })
	publishTask(t, js, names, "t1", srv.URL+"/") // the same task again, while it runs
	testutil.Eventually(t, 5*time.Second, "the second delivery", func() bool { return svc.Stats.Redelivered.Load() > 0 })
	release()
	testutil.Eventually(t, 5*time.Second, "the fetch to end", func() bool { return svc.Stats.Fetched.Load() > 0 })
	if n := hits.Load(); n != 1 {
		t.Errorf("URL fetched %d times, want 1", n)
	}
	if svc.Stats.Redelivered.Load() != 1 {
		t.Errorf("redelivered = %d, want 1", svc.Stats.Redelivered.Load())
	}
}

// A fetch that outlasts the fetch consumer's ack wait is kept alive often
// enough not to be redelivered: the keep-alive follows the ack wait (2 x
// --fetch-timeout + 5 s, under the old fixed 15 s for a timeout under 5 s).
func TestKeepAliveFollowsTheAckWait(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(2500 * time.Millisecond) // a fetch that outlasts the ack wait
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html></html>")
	}))
	defer srv.Close()
	js, names := testbus.Start(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cons, err := js.Consumer(ctx, names.StreamFetch(), names.ConsumerFetcher())
	if err != nil {
		t.Fatal(err)
	}
	cfg := cons.CachedInfo().Config
	cfg.AckWait = time.Second
	if _, err := js.UpdateConsumer(ctx, names.StreamFetch(), cfg); err != nil {
		t.Fatal(err)
	}
	svc := runFetcher(ctx, js, names, 4, 10*time.Second)
	publishTask(t, js, names, "t1", srv.URL+"/")
	testutil.Eventually(t, 15*time.Second, "the page to be fetched", func() bool { return svc.Stats.Fetched.Load() > 0 })
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 1 || svc.Stats.Redelivered.Load() != 0 || info.NumRedelivered != 0 {
		t.Errorf("a 2.5 s fetch under a 1 s ack wait: %d requests, %d redeliveries seen by the fetcher, %d by the consumer; want 1, 0, 0",
			hits.Load(), svc.Stats.Redelivered.Load(), info.NumRedelivered)
	}
}

// runFetcher runs a fetcher on js (set up by the test) that ignores
// robots.txt and may fetch loopback servers, until ctx ends; startFetcher
// makes its own bus.
func runFetcher(ctx context.Context, js jetstream.JetStream, names subjects.Names, workers int, timeout time.Duration) *Service {
	svc := newFetcher(js, names, workers, timeout)
	go svc.Run(ctx)
	return svc
}

// newFetcher is runFetcher's replica, not started.
func newFetcher(js jetstream.JetStream, names subjects.Names, workers int, timeout time.Duration) *Service {
	return New(Options{JS: js, Names: names, Workers: workers, MaxPayload: 8 << 20, MaxDeliver: 5, IgnoreRobots: true,
		HTTP: HTTPOptions{Timeout: timeout, AllowPrivate: true}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}
