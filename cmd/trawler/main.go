// Command trawler is the one binary of the Trawler crawl pipeline: a
// subcommand per service (fetcher, parser, dedup, frontier) for cluster
// deployments, run for the all-in-one mode, and seed and status to drive a
// running crawl.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/logging"
)

type command struct {
	name, args, help string
	run              func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is filled in init: the help command reads it.
var commands []command

func init() {
	commands = []command{
		{"run", "[flags]", "crawl with all four services in this process over an embedded NATS and store", runCmd},
		{"fetcher", "[flags]", "run the fetcher service against an external NATS", serviceCmd("fetcher")},
		{"parser", "[flags]", "run the parser service against an external NATS", serviceCmd("parser")},
		{"dedup", "[flags]", "run the dedup service against an external NATS and Redis", serviceCmd("dedup")},
		{"frontier", "[flags]", "run the frontier service against an external NATS and Redis", serviceCmd("frontier")},
		{"seed", "[flags] URL...", "inject seed URLs (and their scope) into a running pipeline", seedCmd},
		{"status", "[flags]", "show a crawl's health: replicas, rates, queues, errors, dedup hit rates; --watch, --json, --wait", statusCmd},
		{"tap", "[flags] SUBJECT", "print the messages flowing on a subject without disturbing the crawl", tapCmd},
		{"archive", "--out DIR", "write WARC files of fetched pages and JSON Lines of parsed pages (a service)", archiveCmd},
		{"cachesim", "--trace FILE [flags]", "simulate the URL cache policies at many sizes on a recorded fingerprint trace", cachesimCmd},
		{"help", "[COMMAND|settings]", "show a command's flags and arguments, or every crawl setting", helpCmd},
		{"version", "", "print the version and the revision this binary was built from", versionCmd},
	}
}

// memProfileRate is the heap profiler's sampling rate for this binary: 0
// (off), unless GODEBUG sets memprofilerate, which the runtime has applied
// already (rate). Nothing in trawler serves or writes a heap profile, and
// the sampler's stack records cost a short crawl 5 % of its page faults and
// a few percent of its CPU (docs/benchmarks.md).
func memProfileRate(godebug string, rate int) int {
	for _, kv := range strings.Split(godebug, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "memprofilerate=") {
			return rate
		}
	}
	return 0
}

// errUsage means the message was printed already; exit 2.
var errUsage = errors.New("usage")

func main() {
	runtime.MemProfileRate = memProfileRate(os.Getenv("GODEBUG"), runtime.MemProfileRate)
	app.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		case errors.Is(err, errInterrupted), errors.Is(err, errStatusInterrupted):
			fmt.Fprintln(stderr, "trawler:", err)
			return 130
		default:
			fmt.Fprintln(stderr, "trawler:", err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "trawler: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Trawler: a web crawl pipeline over NATS JetStream.")
	fmt.Fprintln(w, "\nUsage: trawler <command> [flags] [arguments]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.help)
	}
	fmt.Fprintln(w, "\n'trawler help COMMAND' shows a command's flags and arguments. Every command accepts every")
	fmt.Fprintln(w, "crawl setting as a flag, a TRAWLER_* environment variable or a key of the --config YAML file:")
	fmt.Fprintln(w, "'trawler help settings' lists them, docs/configuration.md explains them.")
}

// newLogger logs in cfg's --log-format; JSON records also name the crawl
// (--prefix) for collectors that gather several crawls' logs.
func newLogger(w io.Writer, cfg config.Config) *slog.Logger {
	o := logging.Options{Format: cfg.LogFormat, Debug: os.Getenv("TRAWLER_DEBUG") != ""}
	if cfg.LogFormat == logging.JSON {
		o.Crawl = cfg.Prefix
	}
	log, err := logging.New(w, o)
	if err != nil { // Validate refused the format already; stay usable anyway
		log, _ = logging.New(w, logging.Options{Debug: o.Debug})
	}
	logging.RouteLibraries(log)
	return log
}
