package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/services/fetcher"
	"github.com/trawlerhq/trawler/services/parser"
)

// liveCrawl is an all-in-one crawl whose NATS listens on TCP and stays up
// after the crawl is over, so the commands under test can attach to it.
type liveCrawl struct {
	d    *app.Deps
	url  string // NATS URL
	site *testsite.Site
	cfg  config.Config
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCrawl crawls a site of 5 pages on host a (one of them 404) and a link
// to a port that refuses connections: 4 responses 2xx, 1 response 4xx, 1
// failure (refused), 6 URLs seen. before, if set, runs before the services.
func startCrawl(t *testing.T, before func(*app.Deps)) *liveCrawl {
	t.Helper()
	return startCrawlHanding(t, before, false)
}

// startCrawlHanding is startCrawl with, when handOver, the fetcher handing
// its pages to the parser in process (as run and fetcher --with-parser do).
func startCrawlHanding(t *testing.T, before func(*app.Deps), handOver bool) *liveCrawl {
	t.Helper()
	s := testsite.New()
	a := s.AddHost(t, "a", "127.0.0.2")
	dead := "http://127.0.0.6:9/"
	a.Set("/", testsite.Page{Links: []string{a.URL("/1"), a.URL("/2"), a.URL("/missing"), dead}})
	a.Set("/1", testsite.Page{Links: []string{a.URL("/"), a.URL("/3")}})
	a.Set("/2", testsite.Page{Links: []string{a.URL("/1")}})
	a.Set("/3", testsite.Page{})
	var cfg config.Config
	if err := cfg.Parse(flag.NewFlagSet("test", flag.ContinueOnError), nil); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir, cfg.Seeds, cfg.Scope, cfg.AllowPrivate = t.TempDir(), []string{a.URL("/")}, config.ScopeAny, true
	cfg.PolitenessDelay, cfg.PartitionCount, cfg.Progress = 5*time.Millisecond, 4, false
	cfg.IgnoreRobots = true // else the dead host's URL is dropped for its robots.txt, not refused
	log := slog.New(slog.DiscardHandler)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	d, err := app.OpenEmbedded(ctx, cfg, addr, log)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); d.Close() })
	if before != nil {
		before(d)
	}
	if _, err := app.Seed(ctx, d, cfg.Seeds); err != nil {
		t.Fatal(err)
	}
	var fetch *fetcher.Service
	var parse *parser.Service
	for _, name := range app.Services {
		svc, err := app.NewService(ctx, name, d)
		if err != nil {
			t.Fatal(err)
		}
		switch s := svc.(type) {
		case *fetcher.Service:
			fetch = s
			if handOver {
				continue // started below, once the parser is built
			}
		case *parser.Service:
			parse = s
		}
		wg.Add(1)
		go func() { defer wg.Done(); svc.Run(ctx) }()
	}
	if handOver {
		fetch.HandPagesTo(parse.Handle, nil)
		wg.Add(1)
		go func() { defer wg.Done(); fetch.Run(ctx) }()
	}
	parts, _ := cfg.OwnedPartitions()
	if err := heartbeat.Start(ctx, heartbeat.Options{JS: d.JS, Names: d.Names, Service: "run", Services: app.Services,
		Gatherer: d.Registry, Every: 200 * time.Millisecond,
		StoreStats: func(ctx context.Context) (store.Stats, error) { return d.Store.Stats(ctx, parts) }}); err != nil {
		t.Fatal(err)
	}
	w := &crawlstate.Watcher{JS: d.JS, Names: d.Names, Store: d.Store, Partitions: parts}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if _, err := w.Wait(wctx, 50*time.Millisecond, nil); err != nil {
		t.Fatal("crawl did not finish:", err)
	}
	return &liveCrawl{d: d, url: "nats://" + addr, site: s, cfg: cfg}
}

// A crawl whose pages are parsed in process publishes none on
// pages.fetched: status counts them as fetched all the same.
func TestStatusCountsACrawlParsedInProcess(t *testing.T) {
	c := startCrawlHanding(t, nil, true)
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		code, stdout, stderr := trawler(t, "status", "--json", "--nats", c.url, "--partition-count", "4")
		if code != 0 {
			return fmt.Errorf("exit %d: %s", code, stderr)
		}
		var rep statusReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			return fmt.Errorf("%v\n%s", err, stdout)
		}
		if rep.Pages.Fetched != 6 || rep.Pages.Parsed != 6 {
			return fmt.Errorf("fetched %d, parsed %d, want 6 and 6", rep.Pages.Fetched, rep.Pages.Parsed)
		}
		return nil
	})
}

func TestStatusJSONOfAKnownCrawl(t *testing.T) {
	c := startCrawl(t, nil)
	// Ask until the heartbeats after the last fetch and parse are in.
	var rep statusReport
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		code, stdout, stderr := trawler(t, "status", "--json", "--nats", c.url, "--partition-count", "4")
		if code != 0 {
			return fmt.Errorf("exit %d: %s", code, stderr)
		}
		rep = statusReport{}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			return fmt.Errorf("%v\n%s", err, stdout)
		}
		if rep.Pages.Fetched < 6 || rep.Pages.Parsed < 6 || rep.Dedup.In < 7 || len(rep.Replicas) < 4 {
			return fmt.Errorf("heartbeats not current: %s", stdout)
		}
		// done needs the streams drained in status's own look as well.
		if !rep.Done {
			return fmt.Errorf("status does not say done yet: %s", stdout)
		}
		return nil
	})
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("done", rep.Done, true)
	check("pages.fetched", rep.Pages.Fetched, 6) // 5 responses and the refused connection
	check("pages.parsed", rep.Pages.Parsed, 6)
	check("queued", rep.Queued, 0)
	check("frontier.in_flight", rep.Frontier.InFlight, 0)
	check("frontier.enqueued (seen set)", rep.Frontier.Enqueued, 6)
	check("frontier.source", rep.Frontier.Source, "heartbeat")
	check("statuses", rep.Statuses, map[string]float64{"2xx": 4, "4xx": 1})
	check("failures", rep.Failures, map[string]float64{"refused": 1})
	check("dead_letters", rep.DeadLetters, 0)
	check("replicas", rep.Replicas, map[string]int{"dedup": 1, "fetcher": 1, "frontier": 1, "parser": 1})
	check("dedup.urls_new", rep.Dedup.New, 6)
	// The seed, 4 links of /, 2 of /1; the parser holds back /2's link to
	// /1, sent moments ago (splitter cache): 7 URLs in, 6 new.
	check("dedup.urls_in", rep.Dedup.In, 7)
	if rep.Dedup.CacheHitRate <= 0 || rep.Dedup.CacheHitRate > 1 {
		t.Errorf("dedup cache hit rate %v: the 2 repeats should hit the cache", rep.Dedup.CacheHitRate)
	}
	var parser *consumerReport
	for i, cr := range rep.Cons {
		if cr.Name == "parser" {
			parser = &rep.Cons[i]
		}
	}
	if parser == nil || parser.Pending != 0 || parser.AckPending != 0 {
		t.Errorf("parser consumer %+v, want nothing pending", parser)
	}
	if len(rep.Streams) != 6 {
		t.Errorf("%d streams, want 6", len(rep.Streams))
	}

	// The screen says the same in words.
	code, stdout, _ := trawler(t, "status", "--nats", c.url, "--partition-count", "4")
	for _, want := range []string{"DONE", "fetched 6", "2xx 4, 4xx 1", "refused 1", "dedup 1, frontier 1, fetcher 1, parser 1", "seen set 6 URLs"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("status screen lacks %q:\n%s", want, stdout)
		}
	}
	// --watch --json prints a JSON object per update until interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var watched, werr strings.Builder
	if code := run(ctx, []string{"status", "--watch", "--json", "--every", "200ms", "--nats", c.url, "--partition-count", "4"}, &watched, &werr); code != 0 {
		t.Errorf("status --watch: exit %d: %s", code, werr.String())
	}
	lines := strings.Split(strings.TrimSpace(watched.String()), "\n")
	for _, l := range lines {
		var r statusReport
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Pages.Fetched != 6 {
			t.Errorf("status --watch --json line %q: %v", l, err)
		}
	}
	if len(lines) < 3 {
		t.Errorf("status --watch printed %d updates in 1.5s at --every 200ms", len(lines))
	}
	// --wait returns at once on a finished crawl.
	code, stdout, _ = trawler(t, "status", "--wait", "--every", "100ms", "--nats", c.url, "--partition-count", "4")
	if code != 0 || !strings.Contains(stdout, "finished") {
		t.Errorf("status --wait: exit %d\n%s", code, stdout)
	}
}

// consumerStates is every durable consumer's position.
func consumerStates(t *testing.T, js jetstream.JetStream, streams ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range streams {
		st, err := js.Stream(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := st.Info(context.Background())
		out[s] = fmt.Sprintf("msgs %d last %d", info.State.Msgs, info.State.LastSeq)
		l := st.ListConsumers(context.Background())
		for ci := range l.Info() {
			if ci.Config.Durable == "" {
				continue // a tap's ephemeral consumer on its way out
			}
			out[s+"/"+ci.Name] = fmt.Sprintf("delivered %d ack floor %d pending %d ack pending %d redelivered %d",
				ci.Delivered.Stream, ci.AckFloor.Stream, ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
		}
	}
	return out
}

func TestTapLeavesTheCrawlAlone(t *testing.T) {
	// Durable consumers that never read, like an archive that is down: PAGES
	// keeps the crawl's pages for them, and a tap must take nothing from them.
	c := startCrawl(t, func(d *app.Deps) {
		for stream, subject := range map[string]string{d.Names.StreamPages(): d.Names.PagesFetched(), d.Names.StreamParsed(): d.Names.PagesParsed()} {
			if _, err := d.JS.CreateOrUpdateConsumer(context.Background(), stream, jetstream.ConsumerConfig{
				Durable: "downstream", FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
				t.Fatal(err)
			}
		}
	})
	js, names := c.d.JS, c.d.Names
	before := consumerStates(t, js, names.StreamPages(), names.StreamParsed())

	code, stdout, stderr := trawler(t, "tap", "--all", "--max", "6", "--nats", c.url, "pages.parsed")
	if code != 0 {
		t.Fatalf("tap: exit %d: %s", code, stderr)
	}
	urls := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var m struct {
			Subject string
			Seq     uint64
			Data    struct{ URL string }
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("tap line %q: %v", sc.Text(), err)
		}
		if m.Subject != "trawler.pages.parsed" || m.Seq == 0 || m.Data.URL == "" {
			t.Errorf("tap line %q", sc.Text())
		}
		urls[m.Data.URL] = true
	}
	if len(urls) != 6 {
		t.Errorf("tap printed %d distinct pages, want the crawl's 6:\n%s", len(urls), stdout)
	}
	code, stdout, stderr = trawler(t, "tap", "--all", "--max", "6", "--format", "raw", "--nats", c.url, "trawler.pages.fetched")
	if code != 0 || strings.Count(stdout, "<title>a/") != 4 {
		t.Errorf("raw tap of pages.fetched: exit %d, %d HTML pages of host a, want 4\n%s%s", code, strings.Count(stdout, "<title>a/"), stdout, stderr)
	}
	after := consumerStates(t, js, names.StreamPages(), names.StreamParsed())
	if len(before) != 5 || len(after) != len(before) { // 2 streams, 3 durables
		t.Errorf("durable consumers before %v, after %v", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("after tapping, %s: %s, before: %s", k, after[k], v)
		}
	}

	// A work-queue subject is tapped by a plain subscription: publish while
	// the tap listens.
	done := make(chan string)
	go func() {
		_, out, errOut := trawler(t, "tap", "--max", "1", "--format", "raw", "--nats", c.url, "discovered.3")
		done <- out + errOut
	}()
	var out string
	for n := 0; out == ""; n++ {
		if n > 200 {
			t.Fatal("tap of a work-queue subject printed nothing")
		}
		select {
		case out = <-done:
		case <-time.After(50 * time.Millisecond):
			// Until the tap has subscribed, these reach only the stream; dedup
			// drops them as invalid URLs, so the crawl does not grow.
			msg := fmt.Sprintf(`{"v":1,"partition":3,"via":"seed","links":[{"url":"tap test %d","depth":0}]}`, n)
			if err := c.d.NC.Publish(names.Discovered(3), []byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !strings.HasPrefix(out, `{"v":1,"partition":3,"via":"seed","links":[{"url":"tap test `) {
		t.Errorf("raw tap printed %q", out)
	}
}

// `trawler run --archive` ends with a summary table whose numbers the test
// knows: 3 HTML pages (one linking to a 404) are 4 responses, 12 WARC
// records (request, response, metadata each) and 4 JSON lines.
func TestRunSummaryTable(t *testing.T) {
	s := testsite.New()
	a := s.AddHost(t, "a", "127.0.0.2")
	a.Set("/", testsite.Page{Links: []string{a.URL("/1"), a.URL("/2")}})
	a.Set("/1", testsite.Page{Links: []string{a.URL("/missing")}})
	a.Set("/2", testsite.Page{})
	dir := t.TempDir()
	code, stdout, stderr := trawler(t, "run", "--seed", a.URL("/"), "--allow-private", "--ignore-robots", "--data-dir", dir+"/data",
		"--archive", dir+"/archive", "--politeness-delay", "1ms", "--partition-count", "2", "--progress=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"  fetched    4 pages and 0 failures",
		"  responses  2xx 3, 4xx 1\n",
		// the seed, /1 and /2, /missing, and / again (its own "#top" link): a cache hit
		"  dedup      5 URLs in, 4 new; cache hits 20.0%",
		"  archive    12 WARC records, 4 JSON lines in " + dir + "/archive\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

// status --wait on a crawl that stopped moving says what it waits for, on
// stderr, instead of waiting in silence: here the seed's task sits in the
// fetch stream of a crawl with no fetcher.
func TestStatusWaitSaysWhatAStillCrawlWaitsFor(t *testing.T) {
	defer func(d time.Duration) { statusStallAfter = d }(statusStallAfter)
	statusStallAfter = 300 * time.Millisecond
	var cfg config.Config
	if err := cfg.Parse(flag.NewFlagSet("test", flag.ContinueOnError), nil); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir, cfg.Seeds, cfg.Scope, cfg.AllowPrivate = t.TempDir(), []string{"http://127.0.0.2:9/"}, config.ScopeAny, true
	cfg.PartitionCount, cfg.Progress = 4, false
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	d, err := app.OpenEmbedded(ctx, cfg, addr, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); d.Close() })
	for _, name := range app.Services {
		if name == "fetcher" {
			continue
		}
		svc, err := app.NewService(ctx, name, d)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); svc.Run(ctx) }()
	}
	if _, err := app.Seed(ctx, d, cfg.Seeds); err != nil {
		t.Fatal(err)
	}
	var out, errOut testutil.SyncBuffer
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		done <- run(wctx, []string{"status", "--wait", "--every", "100ms", "--nats", "nats://" + addr, "--partition-count", "4"}, &out, &errOut)
	}()
	ok := testutil.WaitFor(20*time.Second, 50*time.Millisecond, func() bool { return strings.Contains(errOut.String(), "has not moved") })
	wcancel()
	<-done
	if !ok {
		t.Fatalf("status --wait said nothing of the still crawl; stderr:\n%s\nstdout:\n%s", errOut.String(), out.String())
	}
	if !strings.Contains(errOut.String(), "it waits for: ") || !strings.Contains(errOut.String(), "in the fetch stream") {
		t.Errorf("the line does not say what the crawl waits for:\n%s", errOut.String())
	}
}
