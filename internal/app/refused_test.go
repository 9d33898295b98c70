package app_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// Issue 18 #4: a run whose seeds the address guard refuses ends at once with
// the address, its class and the flag, without a request (robots.txt
// included), and without the data dir remembering the seed: the same run
// with the flag then crawls it.
func TestRunAllRefusedSeedsFailAtOnce(t *testing.T) {
	s := testsite.New()
	h := s.AddHost(t, "local", "127.0.3.1")
	h.Set("/", testsite.Page{})
	cfg := testConfig(t, []string{h.URL("/")})
	cfg.AllowPrivate = false
	// A refusal retried like an unreachable robots.txt would keep the run
	// going for hours: the context would end it and fail the test.
	cfg.RobotsRetry = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logs testutil.SyncBuffer
	_, err := app.RunAll(ctx, cfg, app.RunOptions{}, slog.New(slog.NewTextHandler(&logs, nil)))
	want := "every seed was refused: blocked address 127.0.3.1 (loopback); pass --allow-private to permit"
	if !errors.Is(err, app.ErrSeedsRefused) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !strings.Contains(logs.String(), "seed refused by the address guard") || !strings.Contains(logs.String(), "(loopback); pass --allow-private to permit") {
		t.Errorf("log lacks the refusal with its class and flag:\n%s", logs.String())
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("the refused site got %d requests", n)
	}

	// Two refused seeds: both logged, the error names the first.
	cfg.Seeds = []string{h.URL("/"), h.URL("/other")}
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); !errors.Is(err, app.ErrSeedsRefused) ||
		!strings.Contains(err.Error(), "(and 1 more seeds; see the log)") {
		t.Fatalf("two refused seeds: err = %v", err)
	}

	// The same data dir with --allow-private: the seed was never taken in,
	// so it is crawled now.
	cfg.Seeds = []string{h.URL("/")}
	cfg.AllowPrivate = true
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Requests(); got[h.URL("/")] != 1 || sum.Fetched != 1 {
		t.Errorf("with --allow-private: requests %v, fetched %d; want the seed once", got, sum.Fetched)
	}
}

// Issue 18 #4: a link to a refused address is final at once: recorded with
// the refusal (class, flag; counted as kind blocked), robots.txt not retried, logged,
// and never connected to. Among several seeds a refused one is left out and
// the rest crawled. The refused address is 0.0.0.0, which only the loopback
// interface would answer: a trap server there counts any request that a
// broken guard let through.
func TestRunAllRefusedLinksAreFinal(t *testing.T) {
	s := testsite.New()
	a := s.AddHost(t, "a", "127.0.3.2")
	trap := s.AddHost(t, "trap", "127.0.0.1")
	trap.Set("/x", testsite.Page{})
	trap.Set("/seed", testsite.Page{})
	trapURL, _ := url.Parse(trap.Base)
	refusedBase := "http://0.0.0.0:" + trapURL.Port()
	a.Set("/", testsite.Page{Links: []string{a.URL("/a1"), refusedBase + "/x"}})
	a.Set("/a1", testsite.Page{})

	cfg := testConfig(t, []string{refusedBase + "/seed", a.URL("/")})
	cfg.Scope = config.ScopeAny
	cfg.RobotsRetry = time.Hour // a retry would outlast the context
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logs testutil.SyncBuffer
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := trap.Requests(); len(got) != 0 {
		t.Fatalf("the refused address was connected to: %v", got)
	}
	if got := s.Requests(); got[a.URL("/")] != 1 || got[a.URL("/a1")] != 1 {
		t.Errorf("requests %v, want the allowed seed's pages once each", got)
	}
	recs := readOut(t, cfg.Out)
	want := "blocked address 0.0.0.0 (unspecified): never fetched"
	if rec := recs[refusedBase+"/x"]; rec == nil || rec["error"] != want {
		t.Errorf("record of the refused link = %v, want error %q", rec, want)
	}
	if rec := recs[refusedBase+"/seed"]; rec != nil {
		t.Errorf("the refused seed was taken in: %v", rec)
	}
	if n := sum.Counters["trawler_fetcher_robots_deferred_total"]; n != 0 {
		t.Errorf("robots.txt of the refused host deferred %v times, want final at once", n)
	}
	if n := sum.Counters[`trawler_fetcher_failures_total{kind="blocked"}`]; n != 1 {
		t.Errorf("failures of kind blocked = %v, want 1", n)
	}
	l := logs.String()
	for _, w := range []string{"seed refused by the address guard", "address refused", "(unspecified): never fetched"} {
		if !strings.Contains(l, w) {
			t.Errorf("log lacks %q:\n%s", w, l)
		}
	}
}
