package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
)

// robots.txt is fetched once per host, obeyed, its Crawl-delay kept, and an
// unreachable one (5xx, timeout) defers the host and finally gives it up.
func TestRobotsGatingAndPoliteness(t *testing.T) {
	s := testsite.New()
	rules := s.AddHost(t, "rules", "127.0.2.1")
	missing := s.AddHost(t, "missing", "127.0.2.2")
	broken := s.AddHost(t, "broken", "127.0.2.3")
	slow := s.AddHost(t, "slow", "127.0.2.4")

	rules.Set("/robots.txt", testsite.Page{Type: "text/plain", Body: "User-agent: *\nDisallow: /\n\nUser-agent: trawler\nDisallow: /private\nAllow: /private/ok\nCrawl-delay: 0.3\n"})
	rules.Set("/", testsite.Page{Links: []string{rules.URL("/a"), rules.URL("/private/x"), rules.URL("/private/ok"), rules.URL("/b")}})
	for _, p := range []string{"/a", "/b", "/private/x", "/private/ok"} {
		rules.Set(p, testsite.Page{})
	}
	// No robots.txt (404): everything allowed.
	missing.Set("/", testsite.Page{Links: []string{missing.URL("/m1")}})
	missing.Set("/m1", testsite.Page{})
	// robots.txt answers 500: the host is deferred, then given up.
	broken.Set("/robots.txt", testsite.Page{Status: 503, Body: "down"})
	broken.Set("/", testsite.Page{})
	// A slow server: the gap after each request is k x its response time.
	slow.Set("/robots.txt", testsite.Page{Status: 404, Body: "none", Delay: 40 * time.Millisecond})
	slow.Set("/", testsite.Page{Links: []string{slow.URL("/s1"), slow.URL("/s2")}, Delay: 40 * time.Millisecond})
	slow.Set("/s1", testsite.Page{Delay: 40 * time.Millisecond})
	slow.Set("/s2", testsite.Page{Delay: 40 * time.Millisecond})

	seeds := []string{rules.URL("/"), missing.URL("/"), broken.URL("/"), slow.URL("/")}
	cfg := testConfig(t, seeds)
	cfg.PolitenessDelay = 10 * time.Millisecond
	cfg.PolitenessFactor = 5
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}

	got := s.Requests()
	if n := got[rules.URL("/private/x")]; n != 0 {
		t.Errorf("disallowed URL fetched %d times", n)
	}
	for _, u := range []string{rules.URL("/"), rules.URL("/a"), rules.URL("/b"), rules.URL("/private/ok"), missing.URL("/m1"), slow.URL("/s2")} {
		if got[u] != 1 {
			t.Errorf("%s fetched %d times, want 1", u, got[u])
		}
	}
	for _, h := range []*testsite.Host{rules, missing, slow} {
		if n := got[h.URL("/robots.txt")]; n != 1 {
			t.Errorf("%s robots.txt fetched %d times, want once", h.Name, n)
		}
	}
	if n := got[broken.URL("/robots.txt")]; n != 3 {
		t.Errorf("unreachable robots.txt tried %d times, want 3 before giving up", n)
	}
	if n := got[broken.URL("/")]; n != 0 {
		t.Errorf("page of a host whose robots.txt is unreachable fetched %d times", n)
	}
	// Crawl-delay 0.3 s holds between every two requests to the host,
	// robots.txt included; the slow host rests 5 x 40 ms after each answer.
	if g := rules.MinGap(); g < 290*time.Millisecond {
		t.Errorf("rules host: smallest gap %s, want >= Crawl-delay 300ms", g)
	}
	if g := slow.MinGap(); g < 190*time.Millisecond {
		t.Errorf("slow host: smallest gap %s, want >= 5 x 40ms", g)
	}
	if o := s.Overlaps(); len(o) > 0 {
		t.Errorf("concurrent requests to %v", o)
	}

	recs := readOut(t, cfg.Out)
	if rec := recs[rules.URL("/private/x")]; rec == nil || !strings.Contains(rec["error"].(string), "robots.txt") {
		t.Errorf("disallowed URL record: %v", rec)
	}
	if rec := recs[broken.URL("/")]; rec == nil || !strings.Contains(rec["error"].(string), "unreachable") {
		t.Errorf("given-up host record: %v", rec)
	}
	if sum.Errors != 1 {
		t.Errorf("errors = %d, want 1 (the given-up host)", sum.Errors)
	}
	if n := sum.Counters[`trawler_fetcher_failures_total{kind="robots"}`]; n != 1 {
		t.Errorf("failures of kind robots = %v, want 1 (the given-up host); counters %v", n, sum.Counters)
	}
}
