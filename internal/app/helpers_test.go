package app_test

import (
	"flag"
	"io"
	"net/url"
	"strings"

	"github.com/trawlerhq/trawler/internal/config"
)

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

type urlURL = url.URL

// testConfigFromEnv reads a Config the way every subcommand does (defaults,
// then TRAWLER_* variables), for the child process of the kill -9 test.
func testConfigFromEnv(fs *flag.FlagSet) config.Config {
	var cfg config.Config
	if err := cfg.Parse(fs, nil); err != nil {
		panic(err)
	}
	return cfg
}

// childEnv is cfg as TRAWLER_* variables, for a child process that reads
// its Config with testConfigFromEnv: every setting that differs from its
// default, seeds aside (services do not seed).
func childEnv(cfg config.Config) []string {
	var scratch config.Config
	fs := newFlagSet()
	scratch.Register(fs) // the flags now point into scratch...
	scratch = cfg        // ...which holds cfg's values
	var env []string
	fs.VisitAll(func(f *flag.Flag) {
		if v := f.Value.String(); v != f.DefValue && f.Name != "seed" {
			env = append(env, "TRAWLER_"+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))+"="+v)
		}
	})
	return env
}
