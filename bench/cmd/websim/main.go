// Command websim serves a synthetic web (bench/websim) until interrupted,
// writes its seeds to a file, and on exit prints the server-side audit of
// whatever crawled it: completeness, duplicates, robots violations and
// politeness per host.
//
//	go run ./cmd/websim -hosts 20 -pages 50 -seeds /tmp/seeds.txt -delay 100ms
//	go run ./cmd/websim -discovery -port 80 -hosts 20 -pages 50 -seeds /tmp/seeds.txt
//
// A discovery web's hosts have names: point the crawler at the DNS server
// it prints (trawler --dns-servers) or at its HTTP proxy.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trawlerhq/trawler/bench/websim"
)

func main() {
	var cfg websim.Config
	var seeds string
	var delay time.Duration
	flag.Uint64Var(&cfg.Seed, "web-seed", 1, "seed of the web")
	flag.IntVar(&cfg.Hosts, "hosts", 20, "hosts, each on its own 127.1.x.y address")
	flag.IntVar(&cfg.Pages, "pages", 50, "pages per host")
	flag.IntVar(&cfg.Port, "port", 18080, "port of every host")
	flag.IntVar(&cfg.SeedHosts, "seed-hosts", 0, "hosts whose home page is a seed (0: all; one on a discovery web)")
	flag.BoolVar(&cfg.Discovery, "discovery", false, "the discovery web: one seed, named hosts (with a DNS server and a proxy), links in every form, text pages")
	flag.IntVar(&cfg.Block, "block", 1, "second octet of the hosts' addresses (127.B.x.y)")
	flag.DurationVar(&cfg.Latency, "latency", 0, "median response latency of a host")
	flag.Float64Var(&cfg.Failing, "failing", 0, "share of hosts that fail, half down (connection refused), half hanging (never answer)")
	flag.IntVar(&cfg.Topics, "topics", 0, "topical mode with this many topics (0: off)")
	flag.BoolVar(&cfg.Traps, "traps", false, "add crawler traps (calendar, ever-longer URLs, redirect chain)")
	flag.StringVar(&seeds, "seeds", "", "write the seed URLs to this file")
	flag.DurationVar(&delay, "delay", 0, "politeness delay the crawler was given, for the audit")
	flag.Parse()
	if err := run(cfg, seeds, delay); err != nil {
		fmt.Fprintln(os.Stderr, "websim:", err)
		os.Exit(1)
	}
}

func run(cfg websim.Config, seeds string, delay time.Duration) error {
	w, err := websim.New(cfg)
	if err != nil {
		return err
	}
	truth := w.Truth()
	s, err := websim.Serve(w)
	if err != nil {
		return err
	}
	defer s.Close()
	if seeds != "" {
		if err := os.WriteFile(seeds, []byte(strings.Join(w.Seeds(), "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("serving %d hosts x %d pages on %s ... %s; truth: %d URLs (%d pages, %d redirects, %d 404s), %d disallowed links, %d trap entrances, %d links to %d failing hosts\n",
		w.Config().Hosts, w.Config().Pages, w.Addr(0), w.Addr(w.Config().Hosts-1),
		len(truth.URLs), truth.Pages, truth.Redirects, truth.NotFound, truth.Disallowed, truth.Traps, truth.OnFailing, truth.FailingHosts)
	if s.DNSAddr() != "" {
		fmt.Printf("hosts site0.test ... site%d.test: DNS server %s (UDP), HTTP proxy %s\n", w.Config().Hosts-1, s.DNSAddr(), s.ProxyAddr())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	a := w.Judge(truth, s.Log(), s.MaxConcurrent, delay)
	fmt.Printf("requests %d (robots.txt %d): completeness %.2f%% (%d missing), %d duplicates (%d aliases), %d robots violations, %d trap hits, %d pages of hanging hosts, %d unknown; "+
		"max concurrent per host %d, min gap %s (pages %s), median gap %s, %d gaps below %s\n",
		a.Requests, a.Robots, 100*a.Completeness(), a.Missing, a.Duplicates, a.Aliases, a.Violations, a.TrapHits, a.ToFailing, a.Unknown,
		a.MaxConcurrent, a.MinGap, a.MinGapPages, a.MedianGapPages, a.GapsBelow, delay)
	return nil
}
