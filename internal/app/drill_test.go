package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// child is one service replica running as its own process (this test
// binary in TRAWLER_TEST_CHILD mode), its output kept for a failing test.
type child struct {
	name string
	cmd  *exec.Cmd
	out  *testutil.SyncBuffer
}

// startChild runs service name as a separate process with cfg.
func startChild(t *testing.T, cfg config.Config, name string) *child {
	t.Helper()
	c := &child{name: name, cmd: exec.Command(os.Args[0], "-test.run=^$"), out: &testutil.SyncBuffer{}}
	c.cmd.Env = append(append(os.Environ(), "TRAWLER_TEST_CHILD=service:"+name), childEnv(cfg)...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		if t.Failed() && c.out.Len() > 0 {
			t.Logf("%s (pid %d) said:\n%s", c.name, c.cmd.Process.Pid, c.out.Tail(6000))
		}
	})
	return c
}

// The fault drill of a production deployment, on one machine: a 3-node NATS
// JetStream cluster (every stream and bucket with 3 replicas), a 3-master
// Redis Cluster, and two replicas of each service as processes. During the
// crawl a third dedup replica joins, a frontier replica is killed with
// SIGKILL and a NATS node is restarted; the crawl still ends with exactly the
// reachable set, repeats bounded by the tasks in flight at the kill, and
// every host's politeness held.
func TestClusterDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster drill")
	}
	testredis.NeedBinary(t, "redis-cli") // skipped without Redis (failed in CI)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	natsCluster := testbus.StartCluster(t, 3)
	redisCluster := testredis.StartCluster(t, 3)
	const hosts, perHost = 6, 40
	s, seeds, want := generatedN(t, hosts, perHost)
	cfg := testConfig(t, seeds)
	cfg.NATSURL = natsCluster.URL()
	cfg.RedisAddrs, cfg.RedisCluster = redisCluster, true
	cfg.Replicas = 3
	cfg.PolitenessDelay = 100 * time.Millisecond
	cfg.PartitionLeaseTTL = 2 * time.Second // the bucket's TTL: the same in every process

	names, err := subjects.New(cfg.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	// The driver creates the replicated topology first, as the chart's
	// services do on start; the meta leader may still be in election.
	testutil.CheckFor(t, 2*time.Minute, 500*time.Millisecond, func() error {
		d, err := app.OpenCluster(ctx, cfg, true, "test-driver", testLogger(t))
		if err != nil {
			return fmt.Errorf("topology on the NATS cluster: %w", err)
		}
		d.Close()
		return nil
	})

	replicas := map[string][]*child{}
	for _, name := range []string{"dedup", "frontier", "fetcher", "parser"} {
		for range 2 {
			replicas[name] = append(replicas[name], startChild(t, cfg, name))
		}
	}
	done := make(chan crawlstate.Snapshot, 1)
	go func() { done <- seedAndWait(t, ctx, cfg) }()

	waitRequests(t, s, len(want)/5, 2*time.Minute)
	replicas["dedup"] = append(replicas["dedup"], startChild(t, cfg, "dedup"))
	t.Logf("a third dedup replica joined after %d of %d URLs", len(pages(t, s)), len(want))

	waitRequests(t, s, 2*len(want)/5, 2*time.Minute)
	if err := replicas["frontier"][0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed frontier pid %d after %d URLs", replicas["frontier"][0].cmd.Process.Pid, len(pages(t, s)))

	waitRequests(t, s, 3*len(want)/5, 2*time.Minute)
	// The node that leads the fetch stream: its loss moves a leader the
	// frontier publishes to and the fetchers pull from.
	node := natsCluster.Index(streamLeader(t, ctx, cfg.NATSURL, names.StreamFetch()))
	natsCluster.Stop(node)
	t.Logf("stopped NATS node %d (fetch stream leader) after %d URLs", node, len(pages(t, s)))
	time.Sleep(2 * time.Second) // the outage under test: the crawl goes on without the node
	natsCluster.Start(node)
	t.Logf("NATS node %d back after %d URLs", node, len(pages(t, s)))

	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("crawl did not finish")
	}
	// Repeats: at most one task per host was in flight at the kill.
	assertResumed(t, s, want, hosts, "")
	assertGaps(t, s, cfg.PolitenessDelay)
}

// assertGaps checks that no host of s had two requests closer than delay.
func assertGaps(t *testing.T, s *testsite.Site, delay time.Duration) {
	t.Helper()
	for _, h := range s.Hosts() {
		if g := h.MinGap(); g < delay {
			t.Errorf("host %s: smallest gap %v, want at least %v", h.Name, g, delay)
		}
	}
}

// streamLeader names the server that leads stream; n0 when none is found.
func streamLeader(t *testing.T, ctx context.Context, natsURL, stream string) string {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, stream)
	if err != nil || st.CachedInfo().Cluster == nil {
		t.Logf("no leader of %s: %v", stream, err)
		return "n0"
	}
	return st.CachedInfo().Cluster.Leader
}
