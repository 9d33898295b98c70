package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/internal/cachestudy"
	"github.com/trawlerhq/trawler/internal/cachestudy/sim"
	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
	"github.com/trawlerhq/trawler/pkg/cache"
)

// cachesimCmd replays a recorded fingerprint trace (--trace-dir) through
// every cache policy at every size: the study of docs/cache-study.md.
func cachesimCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cachesim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		tracePath = fs.String("trace", "", "trace file written by --trace-dir (required)")
		policies  = fs.String("policies", strings.Join(sim.Policies, ","), "policies to simulate: "+strings.Join(sim.Policies, ", "))
		sizes     = fs.String("sizes", "2^4..2^24", "cache sizes: numbers, 2^k, or a power-of-two range a..b, comma-separated")
		partition = fs.Int("partition", urltrace.AllPartitions, "simulate one partition's requests only (-1: the whole trace in file order)")
		split     = fs.Bool("split", false, "simulate dedup's layout: each size split evenly over the trace's partitions, each partition's cache seeing its own requests")
		outDir    = fs.String("out", "", "write table.md, table.csv, missrate.svg and relative.svg here")
		format    = fs.String("format", "markdown", "table on stdout: markdown or csv")
		name      = fs.String("name", "", "trace name in titles (default: the file name)")
		workers   = fs.Int("workers", 0, "simulations run at once (0: GOMAXPROCS)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: trawler cachesim --trace FILE [--policies LIST] [--sizes LIST] [--out DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if *tracePath == "" || fs.NArg() > 0 || (*format != "markdown" && *format != "csv") || (*split && *partition != urltrace.AllPartitions) {
		fs.Usage()
		return errUsage
	}
	ps, err := cachestudy.ParsePolicies(*policies)
	if err != nil {
		return err
	}
	ss, err := cachestudy.ParseSizes(*sizes)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = filepath.Base(*tracePath)
	}

	start := time.Now()
	tab, err := simulate(ctx, *tracePath, *name, *partition, *split, ps, ss, *workers, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "cachesim: %d policies x %d sizes in %s\n", len(ps), len(ss), time.Since(start).Round(time.Millisecond))

	var md strings.Builder
	if err := tab.Markdown(&md); err != nil {
		return err
	}
	for _, p := range []string{cache.Clock, cache.LRU} {
		if c, err := tab.CriticalSize(p); err == nil && slices.Contains(ps, p) {
			fmt.Fprintf(&md, "\n%s: steepest drop at %d entries; within a tenth of the largest size's gain from %d entries (miss rate %.2f%%).\n",
				strings.ToUpper(p), c.Steepest, c.Knee, 100*c.KneeMissRate)
		}
	}
	if *format == "csv" {
		err = tab.CSV(stdout)
	} else {
		_, err = io.WriteString(stdout, md.String())
	}
	if err != nil || *outDir == "" {
		return err
	}
	return writeStudy(*outDir, tab, md.String())
}

// simulate reads the trace and runs the study on it.
func simulate(ctx context.Context, path, name string, partition int, split bool, ps []string, ss []int, workers int, stderr io.Writer) (*cachestudy.Table, error) {
	start := time.Now()
	var (
		parts map[int][]uint64
		fps   []uint64
		h     urltrace.Header
		torn  bool
		err   error
	)
	if split {
		parts, h, torn, err = urltrace.ReadPartitions(path)
		for _, p := range parts {
			fps = append(fps, p...) // only counted below
		}
		name = fmt.Sprintf("%s, split over %d partitions", name, h.Partitions)
	} else {
		fps, h, torn, err = urltrace.ReadFile(path, partition)
		if partition != urltrace.AllPartitions {
			name = fmt.Sprintf("%s, partition %d", name, partition)
		}
	}
	if err != nil {
		return nil, err
	}
	if torn {
		fmt.Fprintln(stderr, "cachesim: the trace ends in a partial block (a recorder still writing, or one that crashed); it was left out")
	}
	fmt.Fprintf(stderr, "cachesim: %s trace of %d partitions: %d requests, read in %s\n",
		h.Kind, h.Partitions, len(fps), time.Since(start).Round(time.Millisecond))
	if len(fps) == 0 {
		return nil, fmt.Errorf("%s: no requests to simulate", path)
	}
	if len(fps) > sim.MaxTraceLen {
		return nil, fmt.Errorf("%s: %d requests, more than the simulator's %d: use --partition", path, len(fps), sim.MaxTraceLen)
	}
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	if split {
		return cachestudy.RunSplit(name, parts, h.Partitions, ps, ss, workers)
	}
	return cachestudy.Run(name, sim.NewTrace(fps), ps, ss, workers)
}

func writeStudy(dir string, tab *cachestudy.Table, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]func(io.Writer) error{
		"table.md":     func(w io.Writer) error { _, err := io.WriteString(w, md); return err },
		"table.csv":    tab.CSV,
		"missrate.svg": tab.PlotMissRate,
	}
	if slices.Contains(tab.Policies, sim.MIN) {
		files["relative.svg"] = tab.PlotRelativeToMIN
	}
	for name, write := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
