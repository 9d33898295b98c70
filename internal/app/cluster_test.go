package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
)

// externalServices returns the NATS URL and Redis address of the machine's
// services. In CI (TRAWLER_CI set) they must be up; elsewhere the test is
// skipped when they are not.
func externalServices(t *testing.T) (string, string) {
	t.Helper()
	natsURL := envOr("NATS_URL", "nats://127.0.0.1:4222")
	redisAddr := envOr("REDIS_ADDR", "127.0.0.1:6379")
	for _, addr := range []string{hostPort(natsURL), redisAddr} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			if os.Getenv("TRAWLER_CI") != "" {
				t.Fatalf("%s unreachable in CI: %v", addr, err)
			}
			t.Skipf("%s unreachable (%v); cluster-mode tests need NATS and Redis", addr, err)
		}
		c.Close()
	}
	return natsURL, redisAddr
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func hostPort(natsURL string) string {
	if len(natsURL) > 7 && natsURL[:7] == "nats://" {
		return natsURL[7:]
	}
	return natsURL
}

// clusterConfig is testConfig for the external services, under a prefix of
// its own so tests never see each other's streams or keys; they are removed
// when the test ends.
func clusterConfig(t *testing.T, seeds []string) config.Config {
	natsURL, redisAddr := externalServices(t)
	cfg := testConfig(t, seeds)
	cfg.NATSURL = natsURL
	cfg.RedisAddrs = []string{redisAddr}
	cfg.Prefix = fmt.Sprintf("t%08x", rand.Uint32())
	t.Cleanup(func() { cleanupPrefix(t, cfg) })
	return cfg
}

func cleanupPrefix(t *testing.T, cfg config.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if nc, err := nats.Connect(cfg.NATSURL); err == nil {
		js, _ := jetstream.New(nc)
		names := js.StreamNames(ctx)
		var del []string
		for n := range names.Name() {
			if strings.HasPrefix(n, toUpper(cfg.Prefix)) || strings.HasPrefix(n, "KV_"+toUpper(cfg.Prefix)) {
				del = append(del, n)
			}
		}
		for _, n := range del {
			_ = js.DeleteStream(ctx, n)
		}
		nc.Close()
	}
	rc := redis.NewClient(&redis.Options{Addr: cfg.RedisAddrs[0]})
	defer rc.Close()
	iter := rc.Scan(ctx, 0, cfg.Prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		rc.Del(ctx, iter.Val())
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

// startServices runs each service as its own component with its own NATS
// (and Redis) connections, as four processes would.
func startServices(t *testing.T, ctx context.Context, cfg config.Config) (stop func()) {
	t.Helper()
	return startServiceSet(t, ctx, cfg, app.Services...)
}

// startServiceSet runs the named services in this process.
func startServiceSet(t *testing.T, ctx context.Context, cfg config.Config, names ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, name := range names {
		m, err := app.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.Open(ctx, cfg, testLogger(t))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		svc, err := m.New(ctx, d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer d.Close()
			if err := svc.Run(ctx); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// waitFinished seeds the crawl and waits for it to end, as 'trawler seed' and
// 'trawler status --wait' do.
func seedAndWait(t *testing.T, ctx context.Context, cfg config.Config) crawlstate.Snapshot {
	t.Helper()
	d, err := app.OpenCluster(ctx, cfg, true, "test-driver", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := app.Seed(ctx, d, cfg.Seeds); err != nil {
		t.Logf("seed: %v", err)
	}
	all, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	w := &crawlstate.Watcher{JS: d.JS, Names: d.Names, Store: d.Store, Partitions: all, MaxPages: cfg.MaxPages}
	s, err := w.Wait(ctx, 100*time.Millisecond, nil)
	if err != nil {
		last, serr := w.Snapshot(context.Background())
		for _, p := range all {
			st, err := d.Store.Load(context.Background(), p)
			for _, h := range st.Hosts {
				if h.InFlight != nil || h.Queued > 0 {
					t.Logf("partition %d host %s: %d queued, not before %v, in flight %+v (%v)", p, h.Host, h.Queued, h.NotBefore, h.InFlight, err)
				}
			}
		}
		t.Fatalf("crawl did not finish: %v (snapshot now %+v, %v; last %+v)", err, last, serr, s)
	}
	return s
}

func TestClusterModeCrawlsWhatRunAllCrawls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The all-in-one crawl of one copy of the site...
	one := newFixture(t)
	if _, err := app.RunAll(ctx, testConfig(t, one.seeds), app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	// ...and the four services, as separate components over the machine's
	// NATS and Redis, on another copy.
	f := newFixture(t)
	cfg := clusterConfig(t, f.seeds)
	stop := startServices(t, ctx, cfg)
	seedAndWait(t, ctx, cfg)
	stop()

	want := f.expected()
	assertFetchedOnce(t, f.site, want)
	assertFetchedOnce(t, one.site, one.expected())
	if len(f.site.Requests()) != len(one.site.Requests()) {
		t.Errorf("cluster mode fetched %d URLs, all-in-one %d", len(f.site.Requests()), len(one.site.Requests()))
	}
}

func TestClusterModePartitionsSplitAcrossReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newFixture(t)
	cfg := clusterConfig(t, f.seeds)
	// Two replicas of dedup and frontier, each owning half the partitions,
	// and two fetchers and parsers sharing their consumers.
	lo, hi := cfg, cfg
	lo.Partitions, hi.Partitions = "0-3", "4-7"
	stopLo := startServices(t, ctx, lo)
	stopHi := startServices(t, ctx, hi)
	seedAndWait(t, ctx, cfg)
	stopLo()
	stopHi()
	assertFetchedOnce(t, f.site, f.expected())
}

// Automatic ownership: a second replica of every service joins during the
// crawl (the partitions are rebalanced), then the first leaves; the crawl
// ends with exactly the reachable set, each URL fetched once except within
// the window of tasks in flight at the handover.
func TestClusterModeOwnershipHandover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, seeds, want := generated(t)
	cfg := clusterConfig(t, seeds)
	cfg.PolitenessDelay = 20 * time.Millisecond
	cfg.PartitionLeaseTTL = time.Second
	if cfg.Partitions != "" {
		t.Fatal("automatic ownership needs an empty --partitions")
	}
	stopA := startServices(t, ctx, cfg)
	done := make(chan crawlstate.Snapshot, 1)
	go func() { done <- seedAndWait(t, ctx, cfg) }()
	waitRequests(t, s, len(want)/4, time.Minute)
	stopB := startServices(t, ctx, cfg) // joins: takes its share
	waitRequests(t, s, len(want)/2, time.Minute)
	stopA() // leaves: hands its partitions to B
	<-done
	stopB()
	assertResumed(t, s, want, 4, "")
}

// A frontier replica killed with SIGKILL mid-crawl: with automatic
// ownership its partitions move to the surviving replica once their leases
// expire, and the crawl ends with exactly the reachable set (repeats only
// within the tasks in flight at the kill), politeness held.
func TestClusterModeFrontierReplicaKill9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, seeds, want := generated(t)
	cfg := clusterConfig(t, seeds)
	cfg.PolitenessDelay = 20 * time.Millisecond
	cfg.PartitionLeaseTTL = 2 * time.Second // the same in every process: it is the bucket's TTL
	frontier := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			"TRAWLER_TEST_CHILD=service:frontier",
			"TRAWLER_NATS="+cfg.NATSURL,
			"TRAWLER_REDIS="+strings.Join(cfg.RedisAddrs, ","),
			"TRAWLER_PREFIX="+cfg.Prefix,
			"TRAWLER_PARTITION_COUNT="+strconv.Itoa(cfg.PartitionCount),
			"TRAWLER_PARTITION_LEASE_TTL=2s",
			"TRAWLER_POLITENESS_DELAY=20ms",
			"TRAWLER_FETCH_TIMEOUT=30s",
		)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	victim, survivor := frontier(), frontier()
	_ = survivor
	stop := startServiceSet(t, ctx, cfg, "dedup", "fetcher", "parser")
	defer stop()
	done := make(chan crawlstate.Snapshot, 1)
	go func() { done <- seedAndWait(t, ctx, cfg) }()
	waitRequests(t, s, len(want)/3, time.Minute)
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed a frontier replica after %d of %d URLs", len(pages(t, s)), len(want))
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("crawl did not finish after the kill")
	}
	assertResumed(t, s, want, 4, "")
}
