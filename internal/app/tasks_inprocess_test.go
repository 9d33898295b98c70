package app_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
)

// `run` hands its fetch tasks to its fetcher in process; with --issue-ahead
// a task leaves the frontier before its host's gap ends, and the fetcher
// must hold a handed one as it holds one from the stream: every host still
// sees gaps of at least the delay, one request at a time, each URL once.
func TestRunHandedTasksKeepTheGapWithIssueAhead(t *testing.T) {
	site, hosts, seeds, want := twoHostSite(t, 12, "hand-a", "127.0.3.11", "hand-b", "127.0.3.12")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := testConfig(t, seeds)
	cfg.PolitenessDelay, cfg.PolitenessFactor, cfg.IssueAhead = issueAheadDelay, 0, 150*time.Millisecond
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	assertFetchedOnce(t, site, want)
	assertGapsAtLeast(t, hosts, issueAheadDelay)
}

// With --nats-listen the fetch tasks go by the fetch stream (other
// processes' fetchers may take them), but run's own fetcher still tells the
// frontier of each fetch's end: a host due at once gets its next task then,
// by the stream, without waiting for the done report. Each URL once, one
// request at a time per host.
func TestRunWithListenHearsAFetchsEnd(t *testing.T) {
	f := newFixture(t)
	cfg := testConfig(t, f.seeds)
	cfg.PolitenessDelay, cfg.PolitenessFactor = 0, 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{Listen: freeAddr(t)}, testLogger(t))
	if err != nil {
		t.Fatalf("RunAll: %v", err)
	}
	assertFetchedOnce(t, f.site, f.expected())
	for _, h := range f.site.Hosts() {
		spans := h.Spans()
		sort.Slice(spans, func(i, j int) bool { return spans[i][0].Before(spans[j][0]) })
		for i := 1; i < len(spans); i++ {
			if spans[i][0].Before(spans[i-1][1]) {
				t.Errorf("host %s: a request began %s before the one before it ended", h.Name, spans[i-1][1].Sub(spans[i][0]))
			}
		}
	}
	if n := sum.Counters["trawler_frontier_fetches_ended_early_total"]; n == 0 {
		t.Errorf("no next task handed at a fetch's end (trawler_frontier_fetches_ended_early_total 0 of %d fetches)", sum.Fetched)
	}
}
