package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/trawlerhq/trawler/internal/config"
)

// commandFlags lists the crawl settings each command acts on; a trailing
// '*' matches a prefix. Every command accepts every setting (one ConfigMap
// serves all Deployments), but its help shows only these, plus its own flags.
var commandFlags = map[string][]string{
	"run": {"seed", "seeds-file", "scope", "allow", "deny", "allow-private", "allow-link-local", "max-pages", "max-depth", "max-pages-per-host", "max-queue-per-host",
		"max-url-length", "max-path-depth", "max-repeated-segments", "max-query-params", "max-redirects", "politeness-*", "max-crawl-delay", "ip-*", "ignore-robots", "robots-*", "fetch-timeout", "max-body",
		"user-agent", "allowed-types", "link-kinds", "sort-query", "drop-params", "topic", "scoring", "relevance-threshold", "out", "min-transfer-rate", "max-deferrals",
		"archive*", "parsed-text", "data-dir", "partition-count", "progress", "metrics-addr", "log-format", "config"},
	"fetcher": {"nats*", "prefix", "politeness-*", "max-crawl-delay", "ip-*", "ignore-robots", "robots-*", "fetch-timeout", "max-body",
		"user-agent", "allowed-types", "allow-private", "allow-link-local", "fetch-workers", "fetch-backlog", "with-parser", "resolver", "dns-*", "max-deliver", "metrics-addr", "log-format", "config", "min-transfer-rate"},
	"parser": {"nats*", "prefix", "partition-count", "link-kinds", "sort-query", "drop-params", "allow", "deny", "topic", "scoring",
		"relevance-threshold", "max-depth", "max-url-length", "max-path-depth", "max-repeated-segments", "max-query-params", "max-redirects", "parse-workers", "parsed-*", "splitter-cache-size",
		"max-deliver", "metrics-addr", "log-format", "config"},
	"dedup": {"nats*", "redis*", "prefix", "partition-count", "partitions", "partition-lease-ttl", "replicas", "dedup-*",
		"max-deliver", "metrics-addr", "log-format", "config"},
	"frontier": {"nats*", "redis*", "prefix", "partition-count", "partitions", "partition-lease-ttl", "replicas", "politeness-*",
		"max-crawl-delay", "issue-ahead", "max-pages", "max-pages-per-host", "max-queue-per-host", "max-attempts", "max-deferrals", "fetch-timeout",
		"max-deliver", "metrics-addr", "log-format", "config"},
	"seed":    {"nats*", "prefix", "partition-count", "seed", "seeds-file", "scope", "log-format", "config"},
	"status":  {"nats*", "redis*", "prefix", "log-format", "config"},
	"tap":     {"nats*", "prefix", "config"},
	"archive": {"nats*", "prefix", "archive-*", "log-format", "config"},
}

// shows reports whether command's help lists the setting named name.
func shows(command, name string) bool {
	for _, p := range commandFlags[command] {
		if p == name || strings.HasSuffix(p, "*") && strings.HasPrefix(name, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

// commandHelp prints a command's usage: what it does, its positional
// arguments, its own flags and the crawl settings it acts on.
func commandHelp(w io.Writer, name string, fs *flag.FlagSet, own map[string]bool) {
	c, _ := findCommand(name)
	fmt.Fprintf(w, "trawler %s: %s\n\nUsage: trawler %s %s\n", c.name, c.help, c.name, c.args)
	var ownFlags, settings []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		switch {
		case own[f.Name]:
			ownFlags = append(ownFlags, f)
		case shows(name, f.Name):
			settings = append(settings, f)
		}
	})
	printFlags := func(title string, flags []*flag.Flag) {
		if len(flags) == 0 {
			return
		}
		sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range flags {
			arg, usage := flag.UnquoteUsage(f)
			if arg != "" {
				arg = " " + arg
			}
			def := ""
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "  --%s%s\n      %s%s\n", f.Name, arg, usage, def)
		}
	}
	printFlags("Flags", ownFlags)
	printFlags("Crawl settings", settings)
	fmt.Fprintf(w, "\nEvery crawl setting is also a TRAWLER_* environment variable and a key of the --config\n"+
		"YAML file; '%s' accepts all %d of them (one ConfigMap serves every service):\n"+
		"'trawler help settings' lists them all, docs/configuration.md explains each.\n", "trawler "+name, countFlags(fs))
}

func countFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// helpCmd is 'trawler help [COMMAND|settings]'.
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0:
		usage(stdout)
		return nil
	case args[0] == "settings":
		fs := flag.NewFlagSet("trawler", flag.ContinueOnError)
		var cfg config.Config
		cfg.Register(fs)
		fs.SetOutput(stdout)
		fmt.Fprintln(stdout, "Crawl settings, accepted by every command (flag, TRAWLER_* variable, --config key):")
		fs.PrintDefaults()
		return nil
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "trawler help: unknown command %q; 'trawler help' lists them\n", args[0])
		return errUsage
	}
	err := c.run(ctx, []string{"-h"}, stdout, stdout)
	if err == flag.ErrHelp {
		return nil
	}
	return err
}

// versionCmd prints the module version and the VCS revision the binary was
// built from.
func versionCmd(_ context.Context, _ []string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, versionString())
	return nil
}

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "trawler (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	out := fmt.Sprintf("trawler %s, %s", v, bi.GoVersion)
	if rev != "" {
		out += fmt.Sprintf(", revision %.12s (%s%s)", rev, at, dirty)
	}
	return out
}
