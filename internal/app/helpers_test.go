package app_test

import (
	"flag"
	"io"
	"net/url"

	"github.com/trawlerhq/trawler/pkg/config"
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
