package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
)

// The services on a lone NATS server that restarts mid-crawl: the work
// queues' consumers, whose state the server keeps in memory, are gone after
// it and are created again by the services; the crawl ends with exactly the
// reachable set, repeats bounded by the tasks in flight at the restart, and
// every host's politeness held.
func TestServicesRideOutALoneNATSRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a NATS server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nats := testbus.StartLone(t)
	const hosts, perHost = 4, 40
	s, seeds, want := generatedN(t, hosts, perHost)
	cfg := clusterConfig(t, seeds) // the machine's Redis, a prefix of its own
	cfg.NATSURL = nats.URL()
	cfg.PolitenessDelay = 50 * time.Millisecond

	stop := startServices(t, ctx, cfg)
	defer stop()
	done := make(chan struct{})
	go func() { seedAndWait(t, ctx, cfg); close(done) }()

	waitRequests(t, s, len(want)/3, 2*time.Minute)
	nats.Stop(0)
	t.Logf("stopped the NATS server after %d URLs", len(pages(t, s)))
	time.Sleep(time.Second)
	nats.Start(0)
	t.Logf("NATS server back after %d URLs", len(pages(t, s)))

	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("crawl did not finish")
	}
	assertResumed(t, s, want, hosts, "")
	assertGaps(t, s, cfg.PolitenessDelay)
}
