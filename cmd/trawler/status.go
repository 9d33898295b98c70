package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
)

// statusCmd shows whether a crawl is healthy and when it will end: once, as
// a screen refreshed every --every (--watch), as status lines until the
// crawl is over (--wait), or as JSON (--json; one object per line with
// --watch or --wait).
// statusStallAfter is how long a crawl may stand still before status --wait
// or --watch says what it waits for (a variable for the tests).
var statusStallAfter = crawlstate.StallAfter

// errStatusInterrupted ends status --wait on Ctrl-C (the crawl goes on).
var errStatusInterrupted = errors.New("interrupted: status stopped waiting; the crawl goes on")

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var wait, watch, asJSON bool
	var every time.Duration
	var top int
	cfg, _, err := parse("status", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&wait, "wait", false, "print status until the crawl is finished, then exit 0")
		fs.DurationVar(&every, "every", 2*time.Second, "interval between updates with --wait or --watch")
		fs.BoolVar(&watch, "watch", false, "redraw the status screen every --every until interrupted")
		fs.BoolVar(&asJSON, "json", false, "print the status as JSON (one object per line with --watch or --wait)")
		fs.IntVar(&top, "top", 5, "show this many hosts with the longest queues (reads every partition of a Redis store; 0: off)")
	})
	if err != nil {
		return err
	}
	a, err := attach(cfg, "trawler-status")
	if err != nil {
		return err
	}
	defer a.nc.Close()
	src, err := openFrontierSource(ctx, cfg, a)
	if err != nil {
		return err
	}
	defer src.close()
	all, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	r := &reporter{
		js: a.js, prefix: cfg.Prefix, src: src, top: top, partitions: all,
		stall:   crawlstate.Stall{After: statusStallAfter},
		watcher: &crawlstate.Watcher{JS: a.js, Names: a.names, Store: src, Partitions: all, MaxPages: cfg.MaxPages},
	}
	tty := false
	if f, ok := stdout.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}

	if !wait && !watch {
		rep, err := r.once(ctx)
		if err != nil {
			return err
		}
		return show(stdout, rep, asJSON, false)
	}
	t := time.NewTicker(min(every, 250*time.Millisecond))
	defer t.Stop()
	var lastShown, downSince time.Time
	for {
		if done, err := stillConnected(a.nc, &downSince); done {
			return err // the crawl's NATS is gone (a trawler run that ended)
		}
		rep, err := r.next(ctx)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(stderr, "trawler status:", err)
		}
		if err == nil && rep.Stalled != "" && !asJSON {
			// Waiting without saying what for would look like a hang.
			fmt.Fprintln(stderr, "trawler status:", rep.Stalled)
		}
		if err == nil && (rep.At.Sub(lastShown) >= every || rep.Done && wait || rep.Stalled != "" && asJSON) {
			lastShown = rep.At
			switch {
			case watch && !asJSON && tty:
				fmt.Fprint(stdout, "\033[H\033[2J")
				show(stdout, rep, false, false)
			case watch || asJSON:
				show(stdout, rep, asJSON, false)
				if !asJSON {
					fmt.Fprintln(stdout)
				}
			default:
				show(stdout, rep, false, true)
			}
		}
		if err == nil && rep.Done && wait {
			if !asJSON {
				fmt.Fprintln(stdout, "finished: every queue is empty and nothing is in flight")
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if wait {
				return errStatusInterrupted
			}
			return nil
		case <-t.C:
		}
	}
}
