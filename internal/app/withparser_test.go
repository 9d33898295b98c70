package app_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/pkg/messages"
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
	crawlWithFetchersParsing(t, ctx, cfg)
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
	d, err := app.OpenCluster(ctx, cfg, false, "test-tap", testLogger(t)) // creates the streams
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.JS.CreateConsumer(ctx, d.Names.StreamPages(), jetstream.ConsumerConfig{Durable: "tap", AckPolicy: jetstream.AckNonePolicy}); err != nil {
		t.Fatal(err)
	}
	crawlWithFetchersParsing(t, ctx, cfg)
	want := f.expected()
	assertFetchedOnce(t, f.site, want)
	if n := pagesPublished(t, ctx, cfg.NATSURL, cfg.Prefix); n < uint64(len(want)) {
		t.Errorf("%d pages published on pages.fetched for the tap, want at least the %d fetched", n, len(want))
	}
}

// crawlWithFetchersParsing seeds cfg's crawl and runs it to its end with
// dedup, frontier and a fetcher --with-parser: no parser service.
func crawlWithFetchersParsing(t *testing.T, ctx context.Context, cfg config.Config) {
	t.Helper()
	cfg.WithParser = true
	stop := startServiceSet(t, ctx, cfg, "dedup", "frontier", "fetcher")
	seedAndWait(t, ctx, cfg)
	stop()
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

// --issue-ahead in the services mode: a host's next task leaves the
// frontier before its gap ends (in the done report's own step) and the
// fetcher holds it; every host still sees one request at a time and gaps of
// at least the delay, and each URL is fetched once.
func TestServicesIssueAheadKeepsTheGap(t *testing.T) {
	site, hosts, seeds, want := twoHostSite(t, 11, "ia-a", "127.0.3.1", "ia-b", "127.0.3.2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := clusterConfig(t, seeds)
	cfg.PolitenessDelay, cfg.PolitenessFactor, cfg.IssueAhead = issueAheadDelay, 0, 150*time.Millisecond
	// Watch the tasks go by: some must leave ahead, saying for how long.
	nc, err := nats.Connect(cfg.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var ahead atomic.Int32
	sub, err := nc.Subscribe(cfg.Prefix+".fetch.>", func(m *nats.Msg) {
		if ns, err := strconv.ParseInt(m.Header.Get(messages.HeaderHoldFor), 10, 64); err == nil && ns > 0 && ns <= int64(issueAheadDelay) {
			ahead.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	crawlWithFetchersParsing(t, ctx, cfg)
	assertFetchedOnce(t, site, want)
	if n := ahead.Load(); n < int32(len(want))/2 {
		t.Errorf("%d of %d tasks issued ahead of their gap's end, want most", n, len(want))
	}
	assertGapsAtLeast(t, hosts, issueAheadDelay)
}

// issueAheadDelay is the politeness delay of the --issue-ahead tests.
const issueAheadDelay = 60 * time.Millisecond

// twoHostSite serves two generated hosts (name, IP, name, IP) and returns
// their home pages as seeds and every URL reachable from them.
func twoHostSite(t *testing.T, seed uint64, nameA, ipA, nameB, ipB string) (*testsite.Site, []*testsite.Host, []string, []string) {
	t.Helper()
	site := testsite.New()
	hosts := []*testsite.Host{site.AddHost(t, nameA, ipA), site.AddHost(t, nameB, ipB)}
	testsite.Generate(hosts, 12, 3, seed)
	var seeds []string
	for _, h := range hosts {
		seeds = append(seeds, h.URL("/"))
	}
	return site, hosts, seeds, site.Reachable(seeds, func(*urlURL) bool { return true }, -1)
}

// assertGapsAtLeast checks each host's smallest gap between requests, as
// the server saw it.
func assertGapsAtLeast(t *testing.T, hosts []*testsite.Host, delay time.Duration) {
	t.Helper()
	for _, h := range hosts {
		if g := h.MinGap(); g < delay {
			t.Errorf("host %s: smallest gap %v, want at least %v", h.Name, g, delay)
		}
		t.Logf("host %s: %d requests, smallest gap %v", h.Name, len(h.Spans()), h.MinGap())
	}
}

// `run --nats-listen`: other processes may connect, but while none reads
// pages.fetched the pages go to the parser in process all the same.
func TestRunWithAListenerHandsPagesOverWhileNothingElseReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newFixture(t)
	cfg := testConfig(t, f.seeds)
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{Listen: freeAddr(t)}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	assertFetchedOnce(t, f.site, f.expected())
	// The data dir keeps the stream's state: open it again to read it.
	d, err := app.OpenEmbedded(ctx, cfg, "", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := d.JS.Stream(ctx, d.Names.StreamPages())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if published := info.State.LastSeq; published != 0 {
		t.Errorf("%d pages published on pages.fetched with nothing else reading it, want 0", published)
	}
}
