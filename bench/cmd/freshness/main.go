// Command freshness is the continuous-crawling benchmark (issue 21): on a
// web whose pages change at known rates (bench/freshweb), it runs `trawler
// run` with revisits on, once per policy, at the same bandwidth, and
// reports Cho and Garcia-Molina's average freshness and age and the bytes
// fetched for pages that had not changed.
//
// The bandwidth is fixed by politeness: with --politeness-delay D and
// --politeness-factor 0 each host gets at most one request per D, so H
// hosts give H/D pages per second. The uniform policy revisits every page
// at one interval, --revisit-min = --revisit-max = I, where I is the time
// that bandwidth takes to go round the web once (pages per host x D), so it
// asks for exactly the bandwidth there is. The adaptive policy (Nutch's
// AdaptiveFetchSchedule, pkg/revisit) runs within [I/8, 8I] by default:
//   - symmetric around I on a log scale, so its first interval without
//     hints (the geometric mean of min and max) is the uniform one: both
//     runs start asking for the same bandwidth;
//   - wide enough that the pages changing fastest alone would ask for more
//     than the cap (I/8 on every page is 8 times the bandwidth), so the cap
//     binds in both runs and they spend the same bandwidth; with a minimum
//     near I the adaptive run leaves bandwidth unused (fewer pages/s, an
//     unequal comparison), and a throwaway simulation of the rule with a
//     per-host cap scored I/8 to I/4 about alike;
//   - 8I reaches the slow pages: one change per 10 min against I = 50 s by
//     default is 12 I, past which a longer interval gains little.
//
// Each run serves the web afresh (same seed, so the same change times
// relative to the run's start), crawls for -duration, stops the crawler
// with SIGTERM, and measures the window after -warmup. A mode ending in
// -novalidators serves no ETag or Last-Modified and ignores conditional
// requests, so the crawler can only tell a change by the body's digest:
// against it, the 304 saving is 1 - (bytes per unchanged fetch with
// validators) / (without).
//
//	cd bench && go run ./cmd/freshness -trawler-bin ../bin/trawler
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/trawlerhq/trawler/bench/freshweb"
)

// options are the benchmark's settings, from the flags.
type options struct {
	web                freshweb.Config
	delay              time.Duration
	duration, warmup   time.Duration
	interval           time.Duration // uniform; 0: pages x delay
	adaptMin, adaptMax time.Duration // 0: interval/8 and interval x 8
	modes              []string
	trawler, repo      string
	extra              []string
	dir                string // runs' logs; "" a new temporary directory
	md                 string
	settle, stopWait   time.Duration
	log                io.Writer
}

var allModes = []string{"uniform", "adaptive", "uniform-novalidators", "adaptive-novalidators"}

func main() {
	var o options
	var modes, extra string
	flag.StringVar(&o.trawler, "trawler-bin", "", "the trawler binary to run (empty: build ./cmd/trawler of -repo)")
	flag.StringVar(&o.repo, "repo", "..", "root of the trawler repository, to build the binary when -trawler-bin is empty")
	flag.Uint64Var(&o.web.Seed, "web-seed", 1, "seed of the web: its pages, rates and change times")
	flag.IntVar(&o.web.Hosts, "hosts", 10, "hosts of the web (each its own loopback address)")
	flag.IntVar(&o.web.Pages, "pages", 50, "pages per host")
	flag.DurationVar(&o.delay, "delay", time.Second, "politeness delay: each host gets one request per delay, so the bandwidth is hosts/delay pages/s")
	flag.DurationVar(&o.duration, "duration", 12*time.Minute, "length of each run")
	flag.DurationVar(&o.warmup, "warmup", 4*time.Minute, "start of the measured window in each run (the first crawl of the web and the adaptive intervals settling)")
	flag.DurationVar(&o.web.ChangeMin, "change-min", 5*time.Second, "mean time between changes of the fastest-changing pages")
	flag.DurationVar(&o.web.ChangeMax, "change-max", 10*time.Minute, "... of the slowest-changing pages (rates log-uniform in between)")
	flag.Float64Var(&o.web.Static, "static", 0.2, "share of pages that never change (0: none)")
	flag.IntVar(&o.web.BodySize, "body", 12<<10, "median page size, bytes")
	flag.IntVar(&o.web.Block, "block", 3, "second octet of the hosts' addresses, 127.B.x.y")
	flag.IntVar(&o.web.Port, "port", 0, "port of every host (0: each takes a free one)")
	flag.DurationVar(&o.interval, "interval", 0, "the uniform policy's interval (0: pages x delay, what the bandwidth allows)")
	flag.DurationVar(&o.adaptMin, "adaptive-min", 0, "the adaptive policy's --revisit-min (0: interval/8)")
	flag.DurationVar(&o.adaptMax, "adaptive-max", 0, "the adaptive policy's --revisit-max (0: interval x 8)")
	flag.StringVar(&modes, "modes", "uniform,adaptive,adaptive-novalidators", "runs, in order: "+strings.Join(allModes, ", "))
	flag.StringVar(&extra, "trawler-flags", "", "extra flags for trawler run, space-separated")
	flag.StringVar(&o.dir, "dir", "", "directory for the runs' logs and data (default: a new temporary directory)")
	flag.StringVar(&o.md, "md", "", "also write the report (Markdown) to this file")
	flag.Parse()
	if o.web.Static == 0 {
		o.web.Static = -1 // freshweb's "none"
	}
	o.modes, o.extra = split(modes), strings.Fields(extra)
	o.log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.main(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "freshness:", err)
		os.Exit(1)
	}
}

// run is one policy's crawl and what it scored.
type run struct {
	mode       string
	validators bool
	min, max   time.Duration
	res        freshweb.Result
	theory     freshweb.Theory
	stopped    string // how the crawler ended, when not cleanly
}

func (o *options) check() error {
	if o.web.Hosts < 1 || o.web.Pages < 1 || o.delay <= 0 {
		return fmt.Errorf("-hosts %d, -pages %d, -delay %s: want positive values", o.web.Hosts, o.web.Pages, o.delay)
	}
	if o.warmup < 0 || o.duration <= o.warmup {
		return fmt.Errorf("-duration %s, -warmup %s: the measured window is what follows the warm-up", o.duration, o.warmup)
	}
	if len(o.modes) == 0 {
		return errors.New("-modes: none given")
	}
	for _, m := range o.modes {
		if !slices.Contains(allModes, m) {
			return fmt.Errorf("-modes: unknown %q (modes: %s)", m, strings.Join(allModes, ", "))
		}
	}
	if o.interval == 0 {
		o.interval = time.Duration(o.web.Pages) * o.delay
	}
	if o.adaptMin == 0 {
		o.adaptMin = o.interval / 8
	}
	if o.adaptMax == 0 {
		o.adaptMax = o.interval * 8
	}
	if o.adaptMin <= 0 || o.adaptMax < o.adaptMin {
		return fmt.Errorf("-adaptive-min %s, -adaptive-max %s: want 0 < min <= max", o.adaptMin, o.adaptMax)
	}
	if o.settle == 0 {
		o.settle = 2 * time.Second
	}
	if o.stopWait == 0 {
		o.stopWait = 30 * time.Second
	}
	// The web's own checks and defaults, before any run; each run sets
	// its own start.
	w, err := freshweb.New(o.web)
	if err != nil {
		return err
	}
	o.web = w.Config()
	o.web.Start, o.web.Now = time.Time{}, nil
	if o.web.Static == 0 {
		o.web.Static = -1 // none: 0 would take the default again
	}
	return nil
}

func (o *options) main(ctx context.Context) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.trawler != "" {
		if err := probe(ctx, o.trawler); err != nil {
			return err
		}
	}
	if o.dir == "" {
		var err error
		if o.dir, err = os.MkdirTemp("", "trawler-freshness-"); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.log, "freshness: logs under %s\n", o.dir)
	if o.trawler == "" {
		o.trawler = filepath.Join(o.dir, "trawler")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.trawler, "./cmd/trawler")
		cmd.Dir = o.repo
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/trawler in %s: %v: %s", o.repo, err, lastLine(string(b)))
		}
		if err := probe(ctx, o.trawler); err != nil {
			return err
		}
	}
	var runs []run
	for i, mode := range o.modes {
		if i > 0 {
			time.Sleep(o.settle) // the previous crawl's sockets close
		}
		r, err := o.crawl(ctx, mode)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		runs = append(runs, r)
	}
	report := o.report(runs)
	fmt.Print(report)
	if o.md != "" {
		return os.WriteFile(o.md, []byte(report), 0o644)
	}
	return nil
}

// probe asks the binary whether `run` takes --revisit-min and
// --revisit-max (they parse before --help answers): a trawler without
// continuous crawling fails here in one line rather than after a run.
func probe(ctx context.Context, bin string) error {
	cmd := exec.CommandContext(ctx, bin, "run", "--revisit-min", "1s", "--revisit-max", "1s", "--help")
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("%s: %v", bin, err)
	}
	why := lastLine(string(out))
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "revisit") {
			why = strings.TrimSpace(l)
			break
		}
	}
	return fmt.Errorf("%s rejects --revisit-min/--revisit-max, so it cannot crawl continuously (%s)", bin, why)
}

// crawl runs one mode: serves the web, runs trawler for o.duration, stops
// it and measures.
func (o *options) crawl(ctx context.Context, mode string) (run, error) {
	r := run{mode: mode, validators: !strings.HasSuffix(mode, "-novalidators"), min: o.interval, max: o.interval}
	if strings.HasPrefix(mode, "adaptive") {
		r.min, r.max = o.adaptMin, o.adaptMax
	}
	cfg := o.web
	cfg.Validators = freshweb.ValidatorsAll
	if !r.validators {
		cfg.Validators = freshweb.ValidatorsNone
	}
	cfg.Start = time.Now()
	web, err := freshweb.New(cfg)
	if err != nil {
		return r, err
	}
	srv, err := freshweb.Serve(web)
	if err != nil {
		return r, err
	}
	defer srv.Close()
	dir := filepath.Join(o.dir, mode)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	seeds := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seeds, []byte(strings.Join(srv.Seeds(), "\n")+"\n"), 0o644); err != nil {
		return r, err
	}
	args := append([]string{"run", "--data-dir", filepath.Join(dir, "data"), "--progress=false",
		"--allow-private", "--seeds-file", seeds,
		"--politeness-delay", o.delay.String(), "--politeness-factor", "0",
		"--revisit-min", r.min.String(), "--revisit-max", r.max.String()}, o.extra...)
	logFile := filepath.Join(dir, "trawler.log")
	f, err := os.Create(logFile)
	if err != nil {
		return r, err
	}
	defer f.Close()
	fmt.Fprintf(o.log, "freshness: %s: %d hosts x %d pages, revisits in [%s, %s], validators %s, %s (measured after %s)\n",
		mode, cfg.Hosts, cfg.Pages, r.min, r.max, cfg.Validators, o.duration, o.warmup)
	cmd := exec.Command(o.trawler, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return r, err
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		// Continuous crawling runs until stopped: an exit is a failure (a
		// flag rejected, a crash), whatever its status.
		return r, fmt.Errorf("trawler run exited after %s (%v): %s (see %s)", time.Since(start).Round(time.Millisecond), err, lastLine(readFile(logFile)), logFile)
	case <-ctx.Done():
		stopProc(cmd, done, o.stopWait)
		return r, ctx.Err()
	case <-time.After(o.duration):
	}
	r.stopped = stopProc(cmd, done, o.stopWait)
	log := srv.Log()
	if err := writeRequests(filepath.Join(dir, "requests.tsv"), log, start); err != nil {
		return r, err
	}
	_ = os.RemoveAll(filepath.Join(dir, "data")) // the crawl's state; the logs stay
	r.res = freshweb.Measure(web, log, start, start.Add(o.warmup), start.Add(o.duration))
	r.theory = freshweb.Predict(web.Rates(), r.res.PerSecond)
	res := r.res
	fmt.Fprintf(o.log, "freshness: %s: %d requests (%.2f/s), freshness %.3f, age %s, %d unchanged fetches (%.0f%% 304, %.0f bytes each), %d pages never fetched%s\n",
		mode, res.Requests, res.PerSecond, res.Freshness, res.Age.Round(100*time.Millisecond), res.Unchanged(), 100*res.Share304(),
		res.BytesPerUnchanged(), res.NeverFetched, map[bool]string{true: "; stopped: " + r.stopped, false: ""}[r.stopped != ""])
	return r, nil
}

// stopProc sends SIGTERM, as an operator would, and kills the process if
// it has not ended within wait; it says how the process ended when that
// was not a clean exit.
func stopProc(cmd *exec.Cmd, done chan error, wait time.Duration) string {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		// 130 is how trawler run ends when a signal stopped it (it
		// finished the work in hand and printed its summary).
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 130) {
			return fmt.Sprintf("exit after SIGTERM: %v", err)
		}
		return ""
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Sprintf("killed: still running %s after SIGTERM", wait)
	}
}

// writeRequests writes the server's log as TSV: ms since the crawl's
// start, host, path, status, version, body and wire bytes, conditional
// headers.
func writeRequests(file string, log []freshweb.Request, start time.Time) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "ms\thost\tpath\tstatus\tversion\tbody\twire\tconditional")
	for _, r := range log {
		fmt.Fprintf(w, "%d\t%d\t%s\t%d\t%d\t%d\t%d\t%s\n", r.Start.Sub(start).Milliseconds(), r.Host, r.Path, r.Status, r.Version, r.Body, r.Wire, r.Cond)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readFile(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

// lastLine is the last non-empty line of s, or a note that there is none.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "no output"
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
