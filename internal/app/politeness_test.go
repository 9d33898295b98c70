package app_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/services/fetcher"
)

// freeAddr returns a loopback address nobody listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startFetchers runs n more fetcher replicas, each with its own NATS
// connection, against the embedded server of a running crawl at addr, until
// ctx ends; stop waits for them and closes their connections.
func startFetchers(t *testing.T, ctx context.Context, cfg config.Config, addr string, n int) (fs []*fetcher.Service, stop func()) {
	t.Helper()
	var wg sync.WaitGroup
	var closers []func() error
	cfg.NATSURL = "nats://" + addr
	var out []*fetcher.Service
	for len(out) < n {
		var d *app.Deps
		testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
			var err error
			d, err = app.OpenCluster(ctx, cfg, false, fmt.Sprintf("extra-fetcher-%d", len(out)), testLogger(t))
			if err != nil {
				return fmt.Errorf("extra fetcher: %w", err)
			}
			return nil
		})
		closers = append(closers, d.Close)
		d.Registry = prometheus.NewRegistry()
		svc, err := app.NewService(ctx, "fetcher", d)
		if err != nil {
			t.Fatal(err)
		}
		f := svc.(*fetcher.Service)
		wg.Add(1)
		go func() { defer wg.Done(); _ = f.Run(ctx) }()
		out = append(out, f)
	}
	return out, func() {
		wg.Wait()
		for _, c := range closers {
			_ = c()
		}
	}
}

// The server-side politeness audit: four fetcher replicas, hosts answering
// at different speeds, two hosts on one IP address. Each host sees one
// request at a time and gaps of at least max(delay, k x response time); the
// shared address sees one request at a time across its hosts.
func TestPolitenessAuditFourFetchers(t *testing.T) {
	site := testsite.New()
	fast := site.AddHost(t, "fast", "127.0.2.1")
	slow := site.AddHost(t, "slow", "127.0.2.2")
	sharedA := site.AddHost(t, "shared-a", "127.0.2.3")
	sharedB := site.AddHost(t, "shared-b", "127.0.2.3")
	hosts := []*testsite.Host{fast, slow, sharedA, sharedB}
	testsite.Generate(hosts, 10, 3, 7)
	const slowResponse, delay, k = 25 * time.Millisecond, 30 * time.Millisecond, 10
	slow.SetDelay(slowResponse)
	sharedA.SetDelay(10 * time.Millisecond)
	sharedB.SetDelay(10 * time.Millisecond)

	var seeds []string
	for _, h := range hosts {
		seeds = append(seeds, h.URL("/"))
	}
	want := site.Reachable(seeds, func(*urlURL) bool { return true }, -1)
	cfg := testConfig(t, seeds)
	cfg.PolitenessDelay, cfg.PolitenessFactor = delay, k
	cfg.IPMaxConcurrent = 1
	cfg.FetchWorkers = 2
	addr := freeAddr(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sum app.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := app.RunAll(ctx, cfg, app.RunOptions{Listen: addr}, testLogger(t))
		done <- result{sum, err}
	}()
	// The extra replicas stop once every page was fetched, before the
	// crawl's embedded server shuts down under them.
	extraCtx, stopExtras := context.WithCancel(ctx)
	extras, waitExtras := startFetchers(t, extraCtx, cfg, addr, 3)
	waitRequests(t, site, len(want)+len(hosts), 3*time.Minute) // pages and robots.txt
	stopExtras()
	waitExtras()
	var res result
	select {
	case res = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("crawl did not finish")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	assertFetchedOnce(t, site, want)

	var byExtras int64
	for _, f := range extras {
		byExtras += f.Stats.Fetched.Load()
	}
	if byExtras == 0 {
		t.Error("the three extra fetcher replicas fetched nothing: the audit did not cover several replicas")
	}
	for _, h := range hosts {
		floor := delay
		if h == slow {
			floor = k * slowResponse // Mercator's rule shows on the slow host
		}
		if g := h.MinGap(); g < floor {
			t.Errorf("host %s: smallest gap %v, want at least %v", h.Name, g, floor)
		}
		t.Logf("host %s: %d requests, smallest gap %v", h.Name, len(h.Spans()), h.MinGap())
	}
	// One IP address, two hosts: never two requests at once (--ip-max-concurrent 1).
	oneAtATime(t, sharedA, sharedB)
	t.Logf("%d pages, %d fetched by the extra replicas, in %v", len(want), byExtras, res.sum.Elapsed)
}

// A frontier restarted mid-crawl keeps every host's timing: the gap between
// the last request before the stop and the first after it is no shorter than
// the configured delay, and nothing is lost.
func TestPolitenessHeldAcrossRestart(t *testing.T) {
	site := testsite.New()
	var hosts []*testsite.Host
	for i := range 3 {
		hosts = append(hosts, site.AddHost(t, fmt.Sprintf("r%d", i), fmt.Sprintf("127.0.2.%d", 10+i)))
	}
	testsite.Generate(hosts, 8, 2, 11)
	var seeds []string
	for _, h := range hosts {
		seeds = append(seeds, h.URL("/"))
	}
	want := site.Reachable(seeds, func(*urlURL) bool { return true }, -1)
	cfg := testConfig(t, seeds)
	const delay = 400 * time.Millisecond // far longer than a restart takes
	cfg.PolitenessDelay, cfg.PolitenessFactor = delay, 0

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
		done <- err
	}()
	waitRequests(t, site, len(want)/2, time.Minute)
	cancel()
	if err := <-done; err != app.ErrInterrupted {
		t.Fatalf("interrupted run: err = %v, want ErrInterrupted", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	if _, err := app.RunAll(ctx2, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	assertResumed(t, site, want, len(hosts), "")
	for _, h := range hosts {
		if g := h.MinGap(); g < delay {
			t.Errorf("host %s: smallest gap %v across the restart, want at least %v", h.Name, g, delay)
		}
	}
}

// `trawler run` without a NATS listener keeps the per-IP table in memory
// (no other process can share it): two hosts on one address still see one
// request at a time between them, with four fetch workers.
func TestRunLocalIPGateHoldsTheCeiling(t *testing.T) {
	site := testsite.New()
	sharedA := site.AddHost(t, "shared-a", "127.0.2.5")
	sharedB := site.AddHost(t, "shared-b", "127.0.2.5")
	hosts := []*testsite.Host{sharedA, sharedB}
	testsite.Generate(hosts, 10, 3, 7)
	sharedA.SetDelay(10 * time.Millisecond)
	sharedB.SetDelay(10 * time.Millisecond)
	seeds := []string{sharedA.URL("/"), sharedB.URL("/")}
	want := site.Reachable(seeds, func(*urlURL) bool { return true }, -1)
	cfg := testConfig(t, seeds)
	cfg.PolitenessDelay, cfg.PolitenessFactor = 0, 0
	cfg.IPMaxConcurrent = 1
	cfg.FetchWorkers = 4
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	assertFetchedOnce(t, site, want)
	spans := oneAtATime(t, sharedA, sharedB)
	if len(spans) < len(want) {
		t.Errorf("%d requests to the shared address, want at least %d", len(spans), len(want))
	}
}

// oneAtATime checks that the hosts, sharing one address, never had two
// requests at once, and returns their requests' spans.
func oneAtATime(t *testing.T, hosts ...*testsite.Host) [][2]time.Time {
	t.Helper()
	var spans [][2]time.Time
	for _, h := range hosts {
		spans = append(spans, h.Spans()...)
	}
	slices.SortFunc(spans, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	for i := 1; i < len(spans); i++ {
		if spans[i][0].Before(spans[i-1][1]) {
			t.Errorf("shared address: a request started at %v while another ran until %v",
				spans[i][0].Format("15:04:05.000"), spans[i-1][1].Format("15:04:05.000"))
		}
	}
	return spans
}
