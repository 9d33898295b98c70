package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
)

var errInterrupted = app.ErrInterrupted

// parse fills a Config for subcommand name; extra registers its own flags.
func parse(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (config.Config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("trawler "+name, flag.ContinueOnError)
	// The flag package would print every flag on any mistake: say what is
	// wrong in one line instead, and the whole help only when asked.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	own := map[string]bool{}
	if extra != nil {
		extra(fs)
		fs.VisitAll(func(f *flag.Flag) { own[f.Name] = true })
	}
	var cfg config.Config
	if err := cfg.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandHelp(stderr, name, fs, own)
			return cfg, fs, err
		}
		fmt.Fprintf(stderr, "trawler %s: %v (see 'trawler help %s')\n", name, err, name)
		return cfg, fs, errUsage
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "trawler:", err)
		return cfg, fs, errUsage
	}
	return cfg, fs, nil
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var listen string
	memoryLimit := app.DefaultMemoryLimit
	cfg, fs, err := parse("run", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "nats-listen", "", "also expose the embedded NATS server on this address, e.g. 127.0.0.1:4223, for taps and status")
		fs.Var(&memoryLimit, "memory-limit", "resident memory to hold the process near, e.g. 300MiB or 1GiB; the garbage collector works harder near it, and says so when that costs a third of the CPU (0: no limit; GOMEMLIMIT, when set, wins over the default)")
	})
	if err != nil {
		return err
	}
	for _, a := range fs.Args() {
		cfg.Seeds = append(cfg.Seeds, a) // "trawler run URL" works too
	}
	log := newLogger(stderr, cfg)
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "memory-limit" })
	opts := app.RunOptions{Listen: listen, MemoryLimit: app.MemoryTarget(memoryLimit, explicit)}
	if cfg.Progress {
		opts.Progress = stderr
	}
	sum, err := app.RunAll(ctx, cfg, opts, log)
	var finished *app.FinishedError
	if errors.As(err, &finished) {
		fmt.Fprintln(stderr, "trawler run:", err) // nothing to do is not a failure
		return nil
	}
	if err != nil && !errors.Is(err, app.ErrInterrupted) {
		return err
	}
	fmt.Fprintf(stdout, "fetched %d pages in %s (%.1f/s), %d errors; %d pages over the crawl's life; %d URLs left queued; %d dead letters\n",
		sum.Fetched, sum.Elapsed.Truncate(time.Millisecond), float64(sum.Fetched)/max(sum.Elapsed.Seconds(), 1e-3),
		sum.Errors, sum.Total, sum.Queued, sum.DeadLetters)
	if cfg.Out != "" {
		fmt.Fprintf(stdout, "results: %s\n", cfg.Out)
	}
	printSummary(stdout, sum, cfg.Archive)
	for i, h := range sum.FailingHosts {
		title := ""
		if i == 0 {
			title = "failing"
		}
		fmt.Fprintf(stdout, "  %-10s %s: %d of %d fetches got no response; last: %s\n", title, h.Host, h.Failures, h.Fetches, h.LastError)
	}
	if err == nil && sum.Fetched == 0 && sum.Errors > 0 && len(sum.FailingHosts) > 0 {
		// Nothing came back at all (every seed dead; seeds the address
		// guard refuses end the run before, app.ErrSeedsRefused): say why,
		// and fail, so that scripts notice.
		h := sum.FailingHosts[0]
		return fmt.Errorf("nothing was fetched: %s: %s", h.Host, h.LastError)
	}
	return err
}

func serviceCmd(name string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		cfg, _, err := parse(name, args, stderr, nil)
		if err != nil {
			return err
		}
		m, err := app.Lookup(name)
		if err != nil {
			return err
		}
		base := newLogger(stderr, cfg)
		d, err := m.Open(ctx, cfg, base)
		if err != nil {
			return err
		}
		defer d.Close()
		return runModule(ctx, m, d, base)
	}
}

// runModule runs one module in this process until ctx ends: its metrics,
// its heartbeat for status, a line when it starts and when it stops.
func runModule(ctx context.Context, m app.Module, d *app.Deps, base *slog.Logger) error {
	cfg, log := d.Config, base.With("service", m.Name)
	svc, err := m.New(ctx, d)
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		app.ServeMetrics(ctx, cfg.MetricsAddr, d, log)
	}
	if err := heartbeat.Start(ctx, heartbeat.Options{JS: d.JS, Names: d.Names, Service: m.Name, Services: app.ServicesOf(svc, m.Name),
		Gatherer: d.Registry, Log: log}); err != nil {
		log.Warn("no heartbeat: trawler status will not count this replica", "err", err)
	}
	owned := cfg.Partitions
	if owned == "" {
		owned = fmt.Sprintf("all %d", cfg.PartitionCount)
	}
	if m.Name == "archive" {
		log.Info("started", "dir", cfg.Archive, "prefix", cfg.Prefix)
	} else {
		log.Info("started", "partitions", owned, "prefix", cfg.Prefix)
	}
	err = svc.Run(ctx)
	log.Info("stopped", "err", err)
	return err
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
	d, err := app.OpenCluster(ctx, cfg, false, "trawler-seed", newLogger(stderr, cfg))
	if err != nil {
		return err
	}
	defer d.Close()
	n, err := app.Seed(ctx, d, seeds)
	fmt.Fprintf(stdout, "seeded %d URLs (scope %s, prefix %s)\n", n, cfg.Scope, cfg.Prefix)
	return err
}
