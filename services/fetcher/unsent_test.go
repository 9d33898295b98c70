package fetcher

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// A result whose publish failed past the in-place window (here: the pages
// stream is gone for a while, as when its leader moves, and the window is
// zero) is published again on the task's redelivery, not fetched again: the
// host sees one request.
func TestUnpublishedResultIsRepublishedNotRefetched(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js, names, srv, hits, restore := withoutPagesStream(t, ctx)
	svc := newFetcher(js, names, 2, 5*time.Second)
	svc.republishFor = 0
	go svc.Run(ctx)
	publishTask(t, js, names, "t1", srv.URL+"/")
	testutil.Eventually(t, 30*time.Second, "the failed publish's result to be kept", func() bool {
		svc.unsent.mu.Lock()
		defer svc.unsent.mu.Unlock()
		return len(svc.unsent.byID) == 1
	})
	restore()
	testutil.Eventually(t, 30*time.Second, "the redelivery to publish the kept result", func() bool { return svc.Stats.Republished.Load() == 1 })
	testutil.Eventually(t, 10*time.Second, "the page in its stream", func() bool {
		info, err := js.Stream(ctx, names.StreamPages())
		// LastSeq, not Msgs: the stream keeps a page only while a
		// consumer wants it, and the recreated one has none.
		return err == nil && info.CachedInfo().State.LastSeq == 1
	})
	if n := hits.Load(); n != 1 {
		t.Errorf("URL fetched %d times, want 1", n)
	}
}

// A publish that fails for a moment (a NATS node restarting) is retried in
// place, the task held: it is not handed back, so no other fetcher replica
// gets it and fetches the URL again outside the host's gap. The task is
// delivered once and acked; the host sees one request.
func TestFailedPublishIsRetriedHoldingTheTask(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js, names, srv, hits, restore := withoutPagesStream(t, ctx)
	svc := runFetcher(ctx, js, names, 2, 5*time.Second)
	publishTask(t, js, names, "t1", srv.URL+"/")
	testutil.Eventually(t, 30*time.Second, "the fetch", func() bool { return hits.Load() == 1 })
	time.Sleep(time.Second) // a few failed retries
	restore()
	testutil.Eventually(t, 30*time.Second, "the retry to publish the result", func() bool { return svc.Stats.Republished.Load() == 1 })
	cons, err := js.Consumer(ctx, names.StreamFetch(), names.ConsumerFetcher())
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the task acked", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.AckFloor.Consumer == 1
	})
	info, _ := cons.Info(ctx)
	if info.NumRedelivered != 0 || info.Delivered.Consumer != 1 {
		t.Errorf("task delivered %d times (%d redelivered), want once", info.Delivered.Consumer, info.NumRedelivered)
	}
	svc.unsent.mu.Lock()
	kept := len(svc.unsent.byID)
	svc.unsent.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d results kept for a redelivery, want none", kept)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("URL fetched %d times, want 1", n)
	}
}

// withoutPagesStream starts a bus whose pages stream is gone (every publish
// of a fetch result fails) and a server that counts its requests; restore
// creates the stream again.
func withoutPagesStream(t *testing.T, ctx context.Context) (jetstream.JetStream, subjects.Names, *httptest.Server, *atomic.Int32, func()) {
	t.Helper()
	srv, hits := countingSite(t)
	js, names := testbus.Start(t, 1)
	pages, err := js.Stream(ctx, names.StreamPages())
	if err != nil {
		t.Fatal(err)
	}
	cfg := pages.CachedInfo().Config
	if err := js.DeleteStream(ctx, names.StreamPages()); err != nil {
		t.Fatal(err)
	}
	return js, names, srv, hits, func() {
		t.Helper()
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
}
