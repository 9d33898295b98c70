package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/bench/websim"
)

// TestSmallWebEveryMode crawls a small discovery web (10 hosts x 20 pages,
// one seed, links in every form) with each mode once, and a seeded web with
// the all-in-one mode, through the harness, and holds every crawler to the
// audit: the whole ground truth, no robots.txt violation, one request at a
// time per host. Trawler must also fetch no URL twice, under any spelling,
// and never breach the delay between a response and the next request (see
// the check below); the peers, Colly and Wget (when installed), are exempt
// from both (Colly races on its visited set and follows redirects at once).
// The measurements must be there (CPU, RSS over the crawl, bytes written);
// speed is measured, never asserted.
func TestSmallWebEveryMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every crawler")
	}
	modes := []string{"run-out", "run-warc", "colly"}
	if _, err := exec.LookPath("wget"); err == nil {
		modes = append(modes, "wget")
	} else {
		t.Log("no wget on PATH: wget mode skipped")
	}
	if natsUp() {
		modes = append(modes, "cluster", "cluster-warc", "cluster-fp")
	} else if os.Getenv("TRAWLER_CI") != "" {
		t.Fatal("TRAWLER_CI is set but NATS does not answer on 127.0.0.1:4222")
	} else {
		t.Log("no NATS on 127.0.0.1:4222: cluster modes skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	delay := 20 * time.Millisecond
	h := harness{delay: delay, timeout: 2 * time.Minute, wgetFor: time.Minute, log: t.Output(), settle: 500 * time.Millisecond,
		natsURL: envOr("NATS_URL", "nats://127.0.0.1:4222"), redisAddr: envOr("REDIS_ADDR", "127.0.0.1:6379")}
	// Its own address block: a benchmark may be serving 127.1.x.y:80.
	cases, err := buildCases("discovery", websim.Config{Seed: 9, Hosts: 10, Pages: 20, Block: 73}, delay, 1, modes, "", 0, "", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	web := cases[0].cfg
	if web.Port != 80 {
		t.Logf("port 80 cannot be bound: the web is on %d, without its default-port links", web.Port)
	}
	if err := h.setup(ctx, web, "../../..", "../..", "", "", false); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(h.tmp)
	check := func(mode string) {
		t.Helper()
		r, err := h.crawl(ctx, mode, 0, 1, 1, "")
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		a := r.audit
		// The peers' duplicates are their own: Colly's visited check is two
		// calls that async goroutines interleave (the driver keeps a set of
		// its own against it, but a redirect's target is Colly's alone), Wget
		// fetches a host's home page again after its robots.txt
		// (docs/benchmarks.md).
		// Colly's robots.txt request is not under its per-host limit, so it
		// may overlap a page request of the same host (seen once: 2 in
		// flight); one request in flight per host is Trawler's to keep.
		peer := mode == "colly" || mode == "wget"
		if a.Completeness() != 1 || (!peer && a.Duplicates != 0) || a.Violations != 0 || a.TrapHits != 0 || a.Unknown != 0 ||
			a.MaxConcurrent < 1 || (!peer && a.MaxConcurrent != 1) {
			t.Errorf("%s: audit %+v", mode, a)
		}
		// A gap short of the delay even from the moment the response began
		// leaving the server is a breach, whatever the machine's load.
		// Counted from the handler's return, a gap can look a few ms short
		// when that goroutine was descheduled after the client already had
		// the response (seen: 1.7 ms and 4.8 ms, once each in ~330 gaps;
		// three of ~190 gaps, the shortest 0.8 ms short, on a loaded CI
		// machine; once 3.2 ms for a 20 ms delay, the handler's return 17 ms
		// late, with no breach): allow a stray few of those
		// (shortGapsAllowed), not a share that a shorter delay would give.
		// A shorter delay shows as breaches: these pages leave the server
		// in microseconds.
		if !peer && (a.Breaches > 0 || a.GapsBelow > shortGapsAllowed(a)) {
			t.Errorf("%s: politeness: %d breaches; %d gaps below %s from the handler's return, smallest %s", mode, a.Breaches, a.GapsBelow, delay, a.MinGapPages)
		}
		if r.m.cpu <= 0 || r.m.rss <= 0 || len(r.rss) == 0 || r.rssAt[2] <= 0 {
			t.Errorf("%s: no rusage or RSS series measured: %+v, rss %v", mode, r.m, r.rss)
		}
		// Trawler persists its crawl and its output: it writes to disk.
		if !peer && r.m.written+r.m.serverWritten <= 0 {
			t.Errorf("%s: no bytes written measured", mode)
		}
		if strings.HasPrefix(mode, "run") {
			t.Logf("%s: store commits / page %s", mode, fsyncText(r))
		}
	}
	for _, mode := range modes {
		check(mode)
	}
	h.srv.Close()

	// The seeded web (every home page a seed, simple hrefs) still works.
	if err := h.serve(websim.Config{Seed: 9, Hosts: 10, Pages: 20, Port: 18973, Block: 73}, delay); err != nil {
		t.Fatal(err)
	}
	defer h.srv.Close()
	check("run")
}

// shortGapsAllowed is how many gaps may look short of the delay from the
// server's side (see the check above): two, or one in fifty page requests.
func shortGapsAllowed(a websim.Audit) int {
	return max(2, (a.Requests-a.Robots)/50)
}

func natsUp() bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// TestDocsCaseWantsEachTreesHomePage: a directory without index.html is
// refused with a line that says what to give.
func TestDocsCaseWantsEachTreesHomePage(t *testing.T) {
	good, bad := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(good, "index.html"), []byte("<p>home</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := docsCase([]string{good}, websim.Config{Port: 8080, Block: 3}, 2, []string{"run-out"})
	if err != nil || c.name != "docs" || len(c.cfg.Dirs) != 1 || c.cfg.Port != 8080 || c.runs != 2 {
		t.Fatalf("docsCase(good) = %+v, %v", c, err)
	}
	if _, err := docsCase([]string{good, bad}, websim.Config{}, 1, nil); err == nil || !strings.Contains(err.Error(), "has no index.html") {
		t.Fatalf("docsCase(bad) error %v, want one naming the missing index.html", err)
	}
}

// A few-hosts case may name its hosts' time to answer (HxP@LATENCY); a
// malformed one is refused with the form it wants.
func TestFewCasesTakeALatency(t *testing.T) {
	cases, err := buildCases("discovery", websim.Config{Hosts: 10, Pages: 20, Port: 18080}, 0, 1, nil, "", 0, "1x600,6x300@5ms", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 || cases[1].name != "few-1" || cases[1].cfg.Latency != 0 ||
		cases[2].name != "few-6@5ms" || cases[2].cfg.Hosts != 6 || cases[2].cfg.Latency != 5*time.Millisecond {
		t.Fatalf("cases %+v", cases)
	}
	for _, bad := range []string{"6x300@", "6x300@fast", "6x300@-1ms", "6@5ms"} {
		if _, err := buildCases("discovery", websim.Config{Port: 18080}, 0, 1, nil, "", 0, bad, 1, nil); err == nil || !strings.Contains(err.Error(), "HOSTSxPAGES@LATENCY") {
			t.Errorf("-few %q: %v", bad, err)
		}
	}
}
