package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
)

func trawler(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut testutil.SyncBuffer // the embedded server logs from its own goroutines
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunCommandCrawlsAndReports(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		hits++
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<a href="/one">1</a> <a href="/two">2</a> <a href="https://elsewhere.example/">x</a>`)
		default:
			fmt.Fprint(w, `<a href="/">home</a>`)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "pages.jsonl")
	code, stdout, stderr := trawler(t, "run", "--seed", srv.URL+"/", "--allow-private", "--data-dir", filepath.Join(dir, "data"),
		"--out", out, "--politeness-delay", "1ms", "--partition-count", "4")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "fetched 3 pages") || hits != 3 {
		t.Errorf("stdout %q, %d hits; want 3 pages", stdout, hits)
	}
	if !strings.Contains(stderr, "done 3") {
		t.Errorf("no final progress line on stderr: %q", stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil || strings.Count(string(data), "\n") != 3 {
		t.Errorf("--out: %v\n%s", err, data)
	}
	// Issue 18: run again on the finished data dir: it says so, and how to go on.
	code, stdout, stderr = trawler(t, "run", "--data-dir", filepath.Join(dir, "data"), "--progress=false")
	if code != 0 || !strings.Contains(stderr, "is finished (3 pages over its life, nothing queued): add --seed URLs") {
		t.Errorf("second run on the finished data dir: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// A new data dir and no seed: an error, exit 1.
	code, _, stderr = trawler(t, "run", "--data-dir", filepath.Join(dir, "empty"), "--progress=false")
	if code != 1 || !strings.Contains(stderr, "no seed URL: give one as an argument, with --seed or --seeds-file") {
		t.Errorf("run without seeds on a new data dir: exit %d, stderr %s", code, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage"},
		{[]string{"help"}, 0, "Commands"},
		{[]string{"crawl"}, 2, `unknown command "crawl"`},
		{[]string{"run", "--scope", "planet", "--seed", "https://example.org/"}, 2, "--scope"},
		{[]string{"run", "--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"run", "-h"}, 0, "--max-pages"},
		{[]string{"help", "fetcher"}, 0, "--fetch-timeout"},
		{[]string{"help", "seed"}, 0, "Usage: trawler seed [flags] URL..."},
		{[]string{"help", "settings"}, 0, "-dedup-cache-size"},
		{[]string{"help", "nope"}, 2, `unknown command "nope"`},
		{[]string{"version"}, 0, "trawler "},
		{[]string{"seed", "--nats", "nats://127.0.0.1:1"}, 2, "give seed URLs"},
		{[]string{"run", "--data-dir", "", "--seed", "https://example.org/"}, 2, "--data-dir"},
		{[]string{"run", "--data-dir", t.TempDir(), "--seed", "not a url"}, 1, "no valid seed"},
	} {
		code, stdout, stderr := trawler(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("trawler %q: exit %d, want %d with %q\nstdout: %s\nstderr: %s", tt.args, code, tt.code, tt.want, stdout, stderr)
		}
	}
}

// Issue 18: every mistake in flags, environment or config file is one line
// that names the source and what to do; nothing exits silently.
func TestSettingErrorsAreOneReadableLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(bad, []byte("max-pages: 10\nscope: [\n"), 0o600)
	os.WriteFile(unknown, []byte("max-pages: 10\nmax-pagez: 3\n"), 0o600)
	for _, tt := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"unknown flag", []string{"run", "--no-such-flag"}, "", "unknown flag --no-such-flag (see 'trawler help run')"},
		{"misspelt flag", []string{"run", "--seeds", "http://a.test/"}, "", "unknown flag --seeds (did you mean --seed?) (see 'trawler help run')"},
		{"not a size", []string{"run", "--max-body", "1x"}, "", `--max-body "1x": "1x" is not a size: want bytes, or a number with KiB, MiB, GiB, KB, MB or GB (see 'trawler help run')`},
		{"not a duration", []string{"run", "--politeness-delay", "5"}, "", `--politeness-delay "5": not a duration such as 500ms, 30s or 2m`},
		{"not a boolean", []string{"run", "--progress=maybe"}, "", `--progress "maybe": not true or false`},
		{"YAML error", []string{"run", "--config", bad}, "", "--config " + bad + ": line 2: "},
		{"unknown key", []string{"run", "--config", unknown}, "", `line 2: unknown setting "max-pagez" (did you mean "max-pages"?)`},
		{"bad variable", []string{"run"}, "abc", `TRAWLER_MAX_PAGES="abc": not a valid value for --max-pages`},
	} {
		if tt.env != "" {
			t.Setenv("TRAWLER_MAX_PAGES", tt.env)
		}
		code, stdout, stderr := trawler(t, tt.args...)
		os.Unsetenv("TRAWLER_MAX_PAGES")
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stdout != "" {
			t.Errorf("%s: exit %d, want 2 and one line with %q\nstdout: %s\nstderr: %s", tt.name, code, tt.want, stdout, stderr)
		}
	}
}

// Issue 18 #4: a seed the address guard refuses is final at once (no robots
// retry), the run fails with the class and the flag, and nothing connects.
func TestRefusedSeedFailsTheRunAtOnce(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	code, stdout, stderr := trawler(t, "run", "--seed", srv.URL+"/", "--data-dir", filepath.Join(t.TempDir(), "data"), "--progress=false")
	if code != 1 || !strings.Contains(stderr, "every seed was refused: blocked address 127.0.0.1 (loopback); pass --allow-private to permit") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the refused server was reached %d times", n)
	}
}

// Issue 18 #5: tap says when no stream holds its subject, and ends with a
// message when the NATS server goes away instead of waiting forever.
func TestTapSaysWhatItWaitsForAndEndsWhenTheBusGoes(t *testing.T) {
	defer func(d time.Duration) { busLostAfter = d }(busLostAfter)
	busLostAfter = 500 * time.Millisecond
	ns, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var code int
	var out, errOut testutil.SyncBuffer
	go func() {
		defer close(done)
		code = run(context.Background(), []string{"tap", "--nats", ns.ClientURL(), "no.such.subject"}, &out, &errOut)
	}()
	// tap says so once it listens.
	testutil.Eventually(t, 10*time.Second, "tap to listen", func() bool { return strings.Contains(errOut.String(), "no stream of this NATS holds") })
	ns.Shutdown()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("tap did not end after its NATS server went away")
	}
	stderr := errOut.String()
	if code != 1 || !strings.Contains(stderr, "no stream of this NATS holds trawler.no.such.subject") ||
		!strings.Contains(stderr, "lost the NATS connection") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
