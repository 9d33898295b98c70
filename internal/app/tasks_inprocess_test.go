package app_test

import (
	"context"
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
