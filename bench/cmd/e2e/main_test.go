package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/bench/websim"
)

// TestSmallWebEveryMode crawls a 10 x 30 web with each mode once, through
// the harness, and holds every crawler to the audit: the whole ground truth,
// no robots.txt violation, one request at a time per host. Trawler must also
// fetch no URL twice and never breach the delay between a response and the
// next request (see the check below); the peers, Colly and Wget (when
// installed), are exempt from both (Colly races on its visited set and
// follows redirects at once). Speed is measured, never asserted.
func TestSmallWebEveryMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three crawlers")
	}
	modes := []string{"run", "colly"}
	if _, err := exec.LookPath("wget"); err == nil {
		modes = append(modes, "wget")
	} else {
		t.Log("no wget on PATH: wget mode skipped")
	}
	if natsUp() {
		modes = append(modes, "cluster")
	} else if os.Getenv("TRAWLER_CI") != "" {
		t.Fatal("TRAWLER_CI is set but NATS does not answer on 127.0.0.1:4222")
	} else {
		t.Log("no NATS on 127.0.0.1:4222: cluster mode skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	delay := 20 * time.Millisecond
	h := harness{delay: delay, timeout: 2 * time.Minute, wgetFor: time.Minute, log: t.Output(),
		natsURL: envOr("NATS_URL", "nats://127.0.0.1:4222"), redisAddr: envOr("REDIS_ADDR", "127.0.0.1:6379")}
	if err := h.setup(ctx, websim.Config{Seed: 9, Hosts: 10, Pages: 30, Port: 18973}, "../../..", "../..", "", "", false); err != nil {
		t.Fatal(err)
	}
	defer h.srv.Close()
	defer os.RemoveAll(h.tmp)
	for _, mode := range modes {
		r, err := h.crawl(ctx, mode, 0, 1, 1, "")
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		a := r.audit
		// The peers' duplicates are their own: Colly's visited check is two
		// calls that async goroutines interleave, Wget fetches a host's
		// home page again after its robots.txt (docs/benchmarks.md).
		peer := mode == "colly" || mode == "wget"
		if a.Completeness() != 1 || (!peer && a.Duplicates != 0) || a.Violations != 0 || a.TrapHits != 0 || a.Unknown != 0 || a.MaxConcurrent != 1 {
			t.Errorf("%s: audit %+v", mode, a)
		}
		// A gap short of the delay even from the moment the response began
		// leaving the server is a breach, whatever the machine's load.
		// Counted from the handler's return, a gap can look a few ms short
		// when that goroutine was descheduled after the client already had
		// the response (seen: 1.7 ms and 4.8 ms, once each in ~330 gaps):
		// allow a stray one of those, not several, none under half the delay.
		if !peer && (a.Breaches > 0 || a.GapsBelow > maxShortGaps || a.MinGapPages < delay/2) {
			t.Errorf("%s: politeness: %d breaches; %d gaps below %s from the handler's return, smallest %s", mode, a.Breaches, a.GapsBelow, delay, a.MinGapPages)
		}
		if r.m.cpu <= 0 || r.m.rss <= 0 {
			t.Errorf("%s: no rusage measured: %+v", mode, r.m)
		}
	}
}

// maxShortGaps is how many gaps may look short of the delay from the
// server's side (see the check above).
const maxShortGaps = 2

func natsUp() bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}
