// Command collycrawl crawls a websim web with the Colly baseline (bench/colly)
// and prints its stats as JSON; the e2e harness runs it as a child process so
// that its CPU time and peak RSS are measured like Trawler's.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/bench/colly"
	"github.com/trawlerhq/trawler/bench/websim"
)

func main() {
	var cfg websim.Config
	var delay time.Duration
	flag.Uint64Var(&cfg.Seed, "web-seed", 1, "websim seed")
	flag.IntVar(&cfg.Hosts, "hosts", 20, "websim hosts")
	flag.IntVar(&cfg.Pages, "pages", 50, "websim pages per host")
	flag.IntVar(&cfg.Port, "port", 18080, "websim port")
	flag.IntVar(&cfg.SeedHosts, "seed-hosts", 0, "hosts whose home page is a seed (0: all; one on a discovery web)")
	flag.IntVar(&cfg.Block, "block", 1, "second octet of the hosts' addresses")
	flag.BoolVar(&cfg.Discovery, "discovery", false, "the discovery web (named hosts, one seed)")
	var dirs string
	flag.StringVar(&dirs, "dirs", "", "the files web: its directories, comma-separated (the harness's -docs)")
	flag.DurationVar(&delay, "delay", 100*time.Millisecond, "politeness delay after each response to a host")
	flag.Parse()
	if dirs != "" {
		cfg.Dirs = strings.Split(dirs, ",")
	}
	w, err := websim.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// One limit rule per host, matched against the request's host[:port];
	// the discovery web's names resolve as a hosts file would.
	hosts := make([]string, cfg.Hosts)
	resolve := map[string]string{}
	for h := range hosts {
		hosts[h] = w.HostPort(h)
		if cfg.Discovery {
			resolve[w.Name(h)] = w.IP(h)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := colly.Options{Seeds: w.Seeds(), Hosts: hosts, Delay: delay, Timeout: 30 * time.Second, Resolve: resolve}
	if len(cfg.Dirs) > 0 {
		// Real pages link to the whole web: follow only this one's hosts.
		for h := range hosts {
			o.AllowedDomains = append(o.AllowedDomains, w.Name(h))
		}
	}
	st, err := colly.Crawl(ctx, o)
	_ = json.NewEncoder(os.Stdout).Encode(st)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
