package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
)

// `run` hands its fetch tasks to its fetcher in process; with --issue-ahead
// a task leaves the frontier before its host's gap ends, and the fetcher
// must hold a handed one as it holds one from the stream: every host still
// sees gaps of at least the delay, one request at a time, each URL once.
func TestRunHandedTasksKeepTheGapWithIssueAhead(t *testing.T) {
	site := testsite.New()
	hosts := []*testsite.Host{site.AddHost(t, "hand-a", "127.0.3.11"), site.AddHost(t, "hand-b", "127.0.3.12")}
	testsite.Generate(hosts, 12, 3, 12)
	var seeds []string
	for _, h := range hosts {
		seeds = append(seeds, h.URL("/"))
	}
	want := site.Reachable(seeds, func(*urlURL) bool { return true }, -1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := testConfig(t, seeds)
	const delay = 60 * time.Millisecond
	cfg.PolitenessDelay, cfg.PolitenessFactor, cfg.IssueAhead = delay, 0, 150*time.Millisecond
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	assertFetchedOnce(t, site, want)
	for _, h := range hosts {
		if g := h.MinGap(); g < delay {
			t.Errorf("host %s: smallest gap %v, want at least %v", h.Name, g, delay)
		}
		t.Logf("host %s: %d requests, smallest gap %v", h.Name, len(h.Spans()), h.MinGap())
	}
}
