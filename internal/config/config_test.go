package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/services/parser"
)

func parse(t *testing.T, args []string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	err := c.Parse(fs, args)
	return c, err
}

func TestPrecedenceDefaultsFileEnvFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trawler.yaml")
	yaml := "max-pages: 10\nmax-depth: 3\nscope: domain\npoliteness-delay: 2s\nseed:\n  - https://a.example/\n  - https://b.example/x,y\n" +
		"x-another-tool: 1\nredis: 10.0.0.1:6379,10.0.0.2:6379\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRAWLER_MAX_DEPTH", "4")
	t.Setenv("TRAWLER_ALLOW_PRIVATE", "true")
	c, err := parse(t, []string{"--config", file, "--max-pages", "20"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxPages != 20 || c.MaxDepth != 4 || c.Scope != ScopeDomain || c.PolitenessDelay != 2*time.Second || !c.AllowPrivate {
		t.Errorf("precedence wrong: %+v", c)
	}
	if !slices.Equal(c.Seeds, []string{"https://a.example/", "https://b.example/x,y"}) {
		t.Errorf("seeds = %q (a comma inside a URL must survive)", c.Seeds)
	}
	if !slices.Equal(c.RedisAddrs, []string{"10.0.0.1:6379", "10.0.0.2:6379"}) {
		t.Errorf("redis = %q", c.RedisAddrs)
	}
	if c.PartitionCount != 32 || c.Prefix != "trawler" || c.DataDir != "./trawler-data" || c.UserAgent != DefaultUserAgent {
		t.Errorf("defaults wrong: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// A misspelt key would leave its setting at the default without a word:
// refused, with its line and the nearest setting; x- keys are for others.
func TestUnknownConfigKeysAreRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trawler.yaml")
	if err := os.WriteFile(file, []byte("max-pages: 10\npoliteness-dealy: 5s\nx-deploy-note: fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := parse(t, []string{"--config", file})
	if err == nil || !strings.Contains(err.Error(), `line 2: unknown setting "politeness-dealy" (did you mean "politeness-delay"?)`) ||
		strings.Contains(err.Error(), "x-deploy-note") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	c, err := parse(t, []string{"--scope", "planet", "--max-pages", "-1", "--partition-count", "0", "--prefix", "bad prefix", "--fetch-timeout", "0s", "--allow-link-local"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--scope", "--max-pages", "--partition-count", "prefix", "--fetch-timeout", "--allow-link-local"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
}

func TestUnknownFlagAndBadValue(t *testing.T) {
	if _, err := parse(t, []string{"--no-such-flag"}); err == nil {
		t.Error("unknown flag accepted")
	}
	if _, err := parse(t, []string{"--max-pages", "many"}); err == nil {
		t.Error("bad number accepted")
	}
	t.Setenv("TRAWLER_POLITENESS_DELAY", "soon")
	if _, err := parse(t, nil); err == nil {
		t.Error("bad env duration accepted")
	}
}

func TestOwnedPartitions(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want []int
		bad  bool
	}{
		{"", []int{0, 1, 2, 3, 4, 5, 6, 7}, false},
		{"all", []int{0, 1, 2, 3, 4, 5, 6, 7}, false},
		{"0-2,5", []int{0, 1, 2, 5}, false},
		{"5,0-1,1", []int{5, 0, 1}, false},
		{"8", nil, true},
		{"3-1", nil, true},
		{"x", nil, true},
		{"-1", nil, true},
	} {
		c := Config{PartitionCount: 8, Partitions: tt.spec}
		got, err := c.OwnedPartitions()
		if (err != nil) != tt.bad || !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %v, %v", tt.spec, got, err)
		}
	}
}

func TestSeedsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seeds.txt")
	os.WriteFile(file, []byte("# seeds\nhttps://a.example/\n\n  https://b.example/  # trailing comment\n"), 0o644)
	c := Config{Seeds: []string{"https://c.example/"}, SeedsFile: file}
	got, err := c.AllSeeds()
	if err != nil || !slices.Equal(got, []string{"https://c.example/", "https://a.example/", "https://b.example/"}) {
		t.Errorf("AllSeeds = %q, %v", got, err)
	}
	c.SeedsFile = filepath.Join(t.TempDir(), "missing")
	if _, err := c.AllSeeds(); err == nil || !strings.Contains(err.Error(), "--seeds-file") {
		t.Errorf("missing file: %v", err)
	}
}

// The duplicate window must outlast a crashed fetcher's replay: its task
// comes back after FetchAckWait and is fetched again within FetchTimeout.
func TestDedupWindowCoversAFetcherReplay(t *testing.T) {
	c, err := parse(t, []string{"--fetch-timeout", "1m"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "--dedup-window 2m0s: want at least 3m5s") {
		t.Fatalf("2m window with a 1m fetch timeout: %v", err)
	}
	c, err = parse(t, []string{"--fetch-timeout", "1m", "--dedup-window", "3m5s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// --near-duplicates maps onto the parser's options; off, the parser gets
// none; a distance out of range is refused by Validate, naming the flag.
func TestNearDuplicateFlags(t *testing.T) {
	c, err := parse(t, []string{"--near-duplicates", "--near-duplicate-distance", "6", "--near-duplicate-window", "50", "--near-duplicate-skip-links"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var o parser.Options
	if err := c.ParserOptions(&o); err != nil {
		t.Fatal(err)
	}
	want := parser.NearDuplicates{Distance: 6, PerHost: 50, Hosts: parser.DefaultNearDuplicateHosts, SkipLinks: true}
	if o.NearDuplicates == nil || *o.NearDuplicates != want {
		t.Errorf("parser options %+v, want %+v", o.NearDuplicates, want)
	}

	c, _ = parse(t, nil)
	o = parser.Options{}
	if err := c.ParserOptions(&o); err != nil || o.NearDuplicates != nil {
		t.Errorf("default: near-duplicates %+v (err %v), want off", o.NearDuplicates, err)
	}

	c, _ = parse(t, []string{"--near-duplicates", "--near-duplicate-distance", "20"})
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--near-duplicate-distance 20") {
		t.Errorf("distance 20: %v, want an error naming the flag", err)
	}
}

// --revisit-min/--revisit-max: both or neither, a range, and no per-host
// budget beside them; each refusal names the flag.
func TestRevisitFlags(t *testing.T) {
	c, err := parse(t, []string{"--revisit-min", "1h", "--revisit-max", "720h"})
	if err != nil || c.Validate() != nil {
		t.Fatalf("parse: %v, validate: %v", err, c.Validate())
	}
	s, err := c.RevisitSchedule()
	if err != nil || s == nil || s.Min != time.Hour || s.Max != 720*time.Hour || c.HostBudget() != 0 {
		t.Fatalf("schedule %+v, %v, host budget %d", s, err, c.HostBudget())
	}
	if c, _ := parse(t, nil); c.Continuous() || c.HostBudget() != DefaultMaxPagesPerHost {
		t.Fatalf("default: continuous %v, host budget %d", c.Continuous(), c.HostBudget())
	}
	for args, want := range map[string]string{
		"--revisit-min 1h":                                          "needs both",
		"--revisit-min 2h --revisit-max 1h":                         "--revisit-max 1h0m0s is below --revisit-min 2h0m0s",
		"--revisit-min 1h --revisit-max 2h --max-pages-per-host 10": "--max-pages-per-host 10 with --revisit-max",
	} {
		c, err := parse(t, strings.Fields(args))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error with %q", args, err, want)
		}
	}
}

// --archive-gzip-level is a gzip level; another number is refused, naming
// the flag.
func TestArchiveGzipLevel(t *testing.T) {
	c, err := parse(t, nil)
	if err != nil || c.ArchiveGzipLevel != 3 {
		t.Fatalf("default level %d, %v", c.ArchiveGzipLevel, err)
	}
	c, err = parse(t, []string{"--archive-gzip-level", "12"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--archive-gzip-level 12: want 1 (fastest) to 9 (smallest)") {
		t.Errorf("level 12: %v", err)
	}
}

// --max-body takes a size with a unit, as --memory-limit does (the docs
// wrote `--max-body 256KiB` before it did), from a flag, the environment
// and the config file; a bare number is still bytes, and the default 1 MiB.
func TestMaxBodyTakesASize(t *testing.T) {
	c, err := parse(t, nil)
	if err != nil || c.MaxBodyBytes != 1<<20 {
		t.Errorf("default: %d, %v; want 1 MiB", c.MaxBodyBytes, err)
	}
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{[]string{"--max-body", "4MiB"}, 4 << 20},
		{[]string{"--max-body", "256KiB"}, 256 << 10},
		{[]string{"--max-body", "2000000"}, 2000000},
		{[]string{"--max-body", "1.5MB"}, 1500000},
	} {
		if c, err := parse(t, tc.args); err != nil || c.MaxBodyBytes != tc.want {
			t.Errorf("%q: %d, %v; want %d", tc.args, c.MaxBodyBytes, err, tc.want)
		}
	}
	file := filepath.Join(t.TempDir(), "trawler.yaml")
	if err := os.WriteFile(file, []byte("max-body: 8MiB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := parse(t, []string{"--config", file}); err != nil || c.MaxBodyBytes != 8<<20 {
		t.Errorf("config file max-body: 8MiB: %d, %v", c.MaxBodyBytes, err)
	}
	t.Setenv("TRAWLER_MAX_BODY", "512KiB")
	if c, err := parse(t, nil); err != nil || c.MaxBodyBytes != 512<<10 {
		t.Errorf("TRAWLER_MAX_BODY=512KiB: %d, %v", c.MaxBodyBytes, err)
	}
	if _, err := parse(t, []string{"--max-body", "lots"}); err == nil || !strings.Contains(err.Error(), "not a size") {
		t.Errorf("--max-body lots: %v, want a size error", err)
	}
}
