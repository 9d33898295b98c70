// Command trawlerprof runs one Trawler service (or the all-in-one crawl)
// exactly as `trawler <service>` / `trawler run` do, while writing a Go CPU
// profile: the product binary has no pprof endpoint, and the benchmark must
// not change product code to get one.
//
//	trawlerprof -cpuprofile fetcher.pprof fetcher --nats ... --prefix ...
//	trawlerprof -cpuprofile run.pprof run --data-dir ... --seeds-file ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
)

func main() {
	fs := flag.NewFlagSet("trawlerprof", flag.ExitOnError)
	profile := fs.String("cpuprofile", "cpu.pprof", "write the CPU profile here")
	memProfile := fs.String("memprofile", "", "also write a heap profile here, at -memprofile-at or when the process stops")
	memAt := fs.Duration("memprofile-at", 0, "write the heap profile this long after the start, while running (0: when the process stops)")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: trawlerprof -cpuprofile FILE run|dedup|frontier|fetcher|parser [trawler flags]")
		os.Exit(2)
	}
	if err := run(*profile, *memProfile, *memAt, fs.Arg(0), fs.Args()[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "trawlerprof:", err)
		os.Exit(1)
	}
}

func run(profile, memProfile string, memAt time.Duration, name string, args []string) error {
	var cfg config.Config
	cfs := flag.NewFlagSet("trawler "+name, flag.ContinueOnError)
	if err := cfg.Parse(cfs, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	app.TuneGC() // as the trawler binary does
	f, err := os.Create(profile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	switch {
	case memProfile != "" && memAt > 0:
		t := time.AfterFunc(memAt, func() { writeHeapProfile(memProfile) })
		defer t.Stop()
	case memProfile != "":
		defer writeHeapProfile(memProfile)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if name == "run" {
		// The memory limit as the trawler binary's default.
		_, err := app.RunAll(ctx, cfg, app.RunOptions{MemoryLimit: app.MemoryTarget(app.DefaultMemoryLimit, false)}, log)
		if errors.Is(err, app.ErrInterrupted) {
			return nil
		}
		return err
	}
	m, err := app.Lookup(name)
	if err != nil {
		return err
	}
	d, err := m.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	svc, err := m.New(ctx, d)
	if err != nil {
		return err
	}
	err = svc.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// writeHeapProfile writes the live heap (after a collection) to file.
func writeHeapProfile(file string) {
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "trawlerprof:", err)
		return
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "trawlerprof:", err)
	}
}
