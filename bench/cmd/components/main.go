// Command components runs the product's component benchmarks (dedup,
// frontier, parser, resolver, robots.txt, store, cache, URLs) several times
// and writes their medians into docs/benchmarks.md: a headline table of the
// figures the issues set goals for, then every benchmark's every metric.
//
//	cd bench && go run ./cmd/components -count 3 -doc ../docs/benchmarks.md
//
// It needs what the benchmarks need: Redis on 127.0.0.1:6379 (or
// REDIS_ADDR). Speed is reported, never asserted.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/bench/internal/mddoc"
)

const modulePath = "github.com/trawlerhq/trawler"

func main() {
	var o options
	flag.StringVar(&o.root, "root", "..", "the product module's directory")
	flag.IntVar(&o.count, "count", 3, "runs of every benchmark (go test -count); the report gives medians")
	flag.StringVar(&o.bench, "bench", ".", "benchmarks to run (go test -bench)")
	flag.StringVar(&o.benchtime, "benchtime", "", "go test -benchtime, when set")
	flag.StringVar(&o.pkgs, "pkgs", "./...", "packages, space-separated")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Minute, "go test -timeout")
	flag.StringVar(&o.doc, "doc", "", "replace the part of this Markdown file between <!-- components:begin --> and <!-- components:end --> with the report (default: print it)")
	flag.StringVar(&o.raw, "raw", "", "also keep go test's output in this file (for benchstat)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "components:", err)
		os.Exit(1)
	}
}

type options struct {
	root, bench, benchtime, pkgs, doc, raw string
	count                                  int
	timeout                                time.Duration
}

func (o options) args() []string {
	args := []string{"test", "-run", "^$", "-bench", o.bench, "-benchmem", "-count", fmt.Sprint(o.count), "-timeout", o.timeout.String()}
	if o.benchtime != "" {
		args = append(args, "-benchtime", o.benchtime)
	}
	return append(args, strings.Fields(o.pkgs)...)
}

func run(ctx context.Context, o options) error {
	if o.count < 1 {
		return errors.New("-count must be at least 1")
	}
	args := o.args()
	fmt.Fprintf(os.Stderr, "components: go %s (in %s)\n", shellJoin(args), o.root)
	start, loadBefore := time.Now(), loadAverage()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.root
	// Progress: the benchmark lines as they come.
	cmd.Stdout = io.MultiWriter(&out, os.Stderr)
	cmd.Stderr = io.MultiWriter(&out, os.Stderr)
	runErr := cmd.Run()
	if o.raw != "" {
		if err := os.WriteFile(o.raw, out.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if runErr != nil {
		kept := o.raw
		if kept == "" {
			// Keep what ran: a long run should not be lost to one failure.
			f, err := os.CreateTemp("", "components-*.txt")
			if err == nil {
				_, err = f.Write(out.Bytes())
				f.Close()
			}
			if err != nil {
				return fmt.Errorf("go test: %v (the document is left as it was)", runErr)
			}
			kept = f.Name()
		}
		return fmt.Errorf("go test: %v (the document is left as it was; go test's output is in %s)", runErr, kept)
	}
	res := parse(&out)
	if len(res.order) == 0 {
		return errors.New("go test ran no benchmark")
	}
	report := render(res, header{
		when: start, took: time.Since(start), machine: mddoc.Machine(),
		command: "cd bench && go run ./cmd/components " + shellJoin(os.Args[1:]),
		goTest:  "go " + shellJoin(args), count: o.count,
		load: [2]string{loadBefore, loadAverage()},
	})
	if o.doc == "" {
		fmt.Print(report)
		return nil
	}
	if err := mddoc.Replace(o.doc, "components", report); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "components: wrote %s\n", o.doc)
	return nil
}

// loadAverage is the 1-minute load average, "?" where /proc has none: the
// report gives it so that a reader can tell a quiet run from a loaded one.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// shellJoin quotes the arguments that a shell would not take as they are,
// so that the report's command can be pasted.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
