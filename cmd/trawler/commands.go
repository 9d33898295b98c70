package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/pkg/config"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
)

var errInterrupted = app.ErrInterrupted

// parse fills a Config for subcommand name; extra registers its own flags.
func parse(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (config.Config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("trawler "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if extra != nil {
		extra(fs)
	}
	var cfg config.Config
	if err := cfg.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, fs, err
		}
		return cfg, fs, fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "trawler:", err)
		return cfg, fs, errUsage
	}
	return cfg, fs, nil
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var listen string
	cfg, fs, err := parse("run", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "nats-listen", "", "also expose the embedded NATS server on this address, e.g. 127.0.0.1:4223, for taps and status")
	})
	if err != nil {
		return err
	}
	for _, a := range fs.Args() {
		cfg.Seeds = append(cfg.Seeds, a) // "trawler run URL" works too
	}
	log := newLogger(stderr)
	opts := app.RunOptions{Listen: listen}
	if cfg.Progress {
		opts.Progress = stderr
	}
	sum, err := app.RunAll(ctx, cfg, opts, log)
	if err != nil && !errors.Is(err, app.ErrInterrupted) {
		return err
	}
	fmt.Fprintf(stdout, "fetched %d pages in %s (%.1f/s), %d errors; %d pages over the crawl's life; %d URLs left queued; %d dead letters\n",
		sum.Fetched, sum.Elapsed.Truncate(time.Millisecond), float64(sum.Fetched)/max(sum.Elapsed.Seconds(), 1e-3),
		sum.Errors, sum.Total, sum.Queued, sum.DeadLetters)
	if cfg.Out != "" {
		fmt.Fprintf(stdout, "results: %s\n", cfg.Out)
	}
	return err
}

func serviceCmd(name string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		cfg, _, err := parse(name, args, stderr, nil)
		if err != nil {
			return err
		}
		base := newLogger(stderr)
		log := base.With("service", name)
		d, err := app.OpenCluster(ctx, cfg, name == "dedup" || name == "frontier", "trawler-"+name, base)
		if err != nil {
			return err
		}
		defer d.Close()
		svc, err := app.NewService(ctx, name, d)
		if err != nil {
			return err
		}
		if cfg.MetricsAddr != "" {
			app.ServeMetrics(ctx, cfg.MetricsAddr, d, log)
		}
		owned := cfg.Partitions
		if owned == "" {
			owned = fmt.Sprintf("all %d", cfg.PartitionCount)
		}
		log.Info("started", "partitions", owned, "prefix", cfg.Prefix)
		err = svc.Run(ctx)
		log.Info("stopped", "err", err)
		return err
	}
}

func seedCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, fs, err := parse("seed", args, stderr, nil)
	if err != nil {
		return err
	}
	cfg.Seeds = append(cfg.Seeds, fs.Args()...)
	seeds, err := cfg.AllSeeds()
	if err != nil {
		return err
	}
	if len(seeds) == 0 {
		fmt.Fprintln(stderr, "trawler seed: give seed URLs as arguments, --seed or --seeds-file")
		return errUsage
	}
	d, err := app.OpenCluster(ctx, cfg, false, "trawler-seed", newLogger(stderr))
	if err != nil {
		return err
	}
	defer d.Close()
	n, err := app.Seed(ctx, d, seeds)
	fmt.Fprintf(stdout, "seeded %d URLs (scope %s, prefix %s)\n", n, cfg.Scope, cfg.Prefix)
	return err
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var wait bool
	var every time.Duration
	cfg, _, err := parse("status", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&wait, "wait", false, "print status until the crawl is finished, then exit 0")
		fs.DurationVar(&every, "every", 2*time.Second, "interval between status lines with --wait")
	})
	if err != nil {
		return err
	}
	d, err := app.OpenCluster(ctx, cfg, true, "trawler-status", newLogger(stderr))
	if err != nil {
		return err
	}
	defer d.Close()
	all, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	w := &crawlstate.Watcher{JS: d.JS, Names: d.Names, Store: d.Store, Partitions: all, MaxPages: cfg.MaxPages}
	print := func(s crawlstate.Snapshot) {
		fmt.Fprintf(stdout, "%s fetched %d | parsed %d | queued %d (discovered %d, frontier intake %d, host queues %d) | in flight %d | parser backlog %d | dead letters %d\n",
			s.At.Format(time.TimeOnly), s.Pages.LastSeq, s.Parsed.LastSeq, s.Queued(), s.Discovered.Msgs, s.Frontier.Msgs,
			s.Store.Queued, s.Store.InFlight, s.ParserBacklog, s.DeadLetters)
	}
	if !wait {
		s, err := w.Snapshot(ctx)
		if err != nil {
			return err
		}
		print(s)
		if s.Idle() {
			fmt.Fprintln(stdout, "idle: nothing queued or in flight")
		}
		return nil
	}
	var lastShown time.Time
	last, err := w.Wait(ctx, 250*time.Millisecond, func(s crawlstate.Snapshot) {
		if s.At.Sub(lastShown) >= every {
			print(s)
			lastShown = s.At
		}
	})
	if err != nil {
		return errInterrupted
	}
	print(last)
	fmt.Fprintln(stdout, "finished: every queue is empty and nothing is in flight")
	return nil
}
