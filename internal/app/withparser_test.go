package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// `trawler fetcher --with-parser` with no parser service: the crawl reaches
// what the four services reach, each URL fetched once, and no page goes
// through the pages stream while nothing else reads it.
func TestFetcherWithParserNeedsNoParserService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newFixture(t)
	cfg := clusterConfig(t, f.seeds)
	cfg.WithParser = true
	stop := startServiceSet(t, ctx, cfg, "dedup", "frontier", "fetcher")
	seedAndWait(t, ctx, cfg)
	stop()
	assertFetchedOnce(t, f.site, f.expected())
	if n := pagesPublished(t, ctx, cfg.NATSURL, cfg.Prefix); n != 0 {
		t.Errorf("%d pages published on pages.fetched with no other reader, want 0", n)
	}
}

// With another reader of pages.fetched (a tap's durable consumer), the
// same process publishes its pages for it, and its own parser loop parses
// them: the crawl is the same, and the tap gets every page.
func TestFetcherWithParserPublishesForATap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newFixture(t)
	cfg := clusterConfig(t, f.seeds)
	cfg.WithParser = true
	d, err := app.OpenCluster(ctx, cfg, false, "test-tap", testLogger(t)) // creates the streams
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.JS.CreateConsumer(ctx, d.Names.StreamPages(), jetstream.ConsumerConfig{Durable: "tap", AckPolicy: jetstream.AckNonePolicy}); err != nil {
		t.Fatal(err)
	}
	stop := startServiceSet(t, ctx, cfg, "dedup", "frontier", "fetcher")
	seedAndWait(t, ctx, cfg)
	stop()
	want := f.expected()
	assertFetchedOnce(t, f.site, want)
	if n := pagesPublished(t, ctx, cfg.NATSURL, cfg.Prefix); n < uint64(len(want)) {
		t.Errorf("%d pages published on pages.fetched for the tap, want at least the %d fetched", n, len(want))
	}
}

// pagesPublished is the pages stream's last sequence: every page published
// on it, read or not.
func pagesPublished(t *testing.T, ctx context.Context, natsURL, prefix string) uint64 {
	t.Helper()
	names, err := subjects.New(prefix)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, names.StreamPages())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}
