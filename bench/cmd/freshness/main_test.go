package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/bench/freshweb"
)

// script writes an executable shell script standing in for trawler.
func script(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "trawler")
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func small(t *testing.T, bin string) *options {
	return &options{
		web:      freshweb.Config{Seed: 3, Hosts: 3, Pages: 8, ChangeMin: time.Second, ChangeMax: time.Minute, Static: 0.2, Block: 83},
		delay:    200 * time.Millisecond,
		duration: 6 * time.Second, warmup: 2 * time.Second,
		modes:   []string{"uniform", "adaptive", "adaptive-novalidators"},
		trawler: bin, dir: t.TempDir(), settle: 200 * time.Millisecond, stopWait: 5 * time.Second,
		log: t.Output(),
	}
}

// TestRejectedFlags: a trawler without continuous crawling fails the probe
// in one line that says so, before any web is served.
func TestRejectedFlags(t *testing.T) {
	bin := script(t, "echo \"trawler run: flag provided but not defined: -revisit-min (see 'trawler help run')\" >&2\nexit 2\n")
	err := small(t, bin).main(context.Background())
	if err == nil {
		t.Fatal("a binary rejecting --revisit-min was run")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "rejects --revisit-min/--revisit-max") || !strings.Contains(msg, "flag provided but not defined: -revisit-min") {
		t.Errorf("error %q: want one line naming the flags and the binary's complaint", msg)
	}
}

// TestCrawlerExits: a crawler that takes the flags but exits during a run
// (continuous crawling runs until stopped) fails with its last words.
func TestCrawlerExits(t *testing.T) {
	bin := script(t, "for a in \"$@\"; do [ \"$a\" = --help ] && exit 0; done\necho starting >&2\necho 'trawler run: --revisit-max 1s is below --revisit-min 2s' >&2\nexit 1\n")
	err := small(t, bin).main(context.Background())
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "uniform: trawler run exited") || !strings.Contains(err.Error(), "is below --revisit-min") {
		t.Errorf("error %v: want one line with the mode and the crawler's last line", err)
	}
}

// TestAgainstReferenceCrawler runs the whole benchmark, small and short,
// against bench/cmd/refcrawl (the revisit rule without Trawler): three
// runs, stopped by SIGTERM, measured and reported.
func TestAgainstReferenceCrawler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds refcrawl and crawls for 20 s")
	}
	bin := filepath.Join(t.TempDir(), "refcrawl")
	if out, err := exec.Command("go", "build", "-o", bin, "../refcrawl").CombinedOutput(); err != nil {
		t.Fatalf("go build refcrawl: %v\n%s", err, out)
	}
	o := small(t, bin)
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if o.interval != 8*200*time.Millisecond || o.adaptMin != o.interval/8 || o.adaptMax != 8*o.interval {
		t.Fatalf("interval %s, adaptive [%s, %s]: want pages x delay and /8, x8", o.interval, o.adaptMin, o.adaptMax)
	}
	var runs []run
	for _, m := range o.modes {
		r, err := o.crawl(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if r.stopped != "" {
			t.Errorf("%s: %s", m, r.stopped)
		}
		runs = append(runs, r)
	}
	for _, r := range runs {
		s := r.res
		// 3 hosts at one request per 200 ms: up to 15 pages/s.
		if s.PerSecond < 5 || s.PerSecond > 15.5 || s.Freshness <= 0 || s.Freshness > 1 || s.NeverFetched != 0 || s.Unchanged() == 0 {
			t.Errorf("%s: %+v", r.mode, s)
		}
		if r.validators != (s.Unchanged304 > 0) {
			t.Errorf("%s: %d of %d unchanged fetches answered 304", r.mode, s.Unchanged304, s.Unchanged())
		}
		if _, err := os.Stat(filepath.Join(o.dir, r.mode, "requests.tsv")); err != nil {
			t.Error(err)
		}
	}
	if s := freshweb.Saving304(runs[1].res, runs[2].res); s < 0.9 {
		t.Errorf("304 saving %.3f", s)
	}
	rep := o.report(runs)
	t.Log("\n" + rep)
	for _, want := range []string{"| uniform | 1.6s |", "| adaptive | 200ms – 12.8s |", "| adaptive-novalidators |", "Adaptive / uniform freshness", "304 saving, adaptive"} {
		if !bytes.Contains([]byte(rep), []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
}
