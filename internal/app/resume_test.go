package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/warc"
	"github.com/trawlerhq/trawler/services/archive"
)

// TestMain lets the test binary act as a `trawler run` child process that a
// test can kill -9: settings come from TRAWLER_* variables, as in production.
func TestMain(m *testing.M) {
	if name, ok := strings.CutPrefix(os.Getenv("TRAWLER_TEST_CHILD"), "service:"); ok {
		// One service of a cluster-mode crawl, as `trawler <name>` runs it.
		cfg := testConfigFromEnv(newFlagSet())
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		m, err := app.Lookup(name)
		var d *app.Deps
		if err == nil {
			d, err = m.Open(ctx, cfg, log)
		}
		if err == nil {
			var svc app.Runner
			if svc, err = m.New(ctx, d); err == nil {
				err = svc.Run(ctx)
			}
			d.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("TRAWLER_TEST_CHILD") == "run" {
		fs := newFlagSet()
		cfg := testConfigFromEnv(fs)
		_, err := app.RunAll(context.Background(), cfg, app.RunOptions{}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// generated is a web big enough to interrupt: 4 hosts of 40 pages, answering
// slowly, crawled politely.
func generated(t *testing.T) (*testsite.Site, []string, []string) {
	return generatedN(t, 4, 40)
}

// generatedN is a generated web of hosts hosts of pages pages each, 4 links
// a page, seeded at every host's root.
func generatedN(t *testing.T, hosts, pages int) (*testsite.Site, []string, []string) {
	s := testsite.New()
	s.Latency = 5 * time.Millisecond
	var hs []*testsite.Host
	var seeds []string
	for i := range hosts {
		h := s.AddHost(t, fmt.Sprintf("h%d", i), fmt.Sprintf("127.0.1.%d", i+1))
		hs = append(hs, h)
		seeds = append(seeds, h.URL("/"))
	}
	testsite.Generate(hs, pages, 4, 42)
	want := s.Reachable(seeds, func(*urlURL) bool { return true }, -1)
	return s, seeds, want
}

// assertResumed checks a crawl that was interrupted and resumed: everything
// reachable fetched, and repeats only within the in-flight window (at most one
// task per host can be in flight when the crawl stops).
func assertResumed(t *testing.T, s *testsite.Site, want []string, hosts int, out string) {
	t.Helper()
	got := pages(t, s)
	repeats := 0
	for _, u := range want {
		switch n := got[u]; {
		case n == 0:
			t.Errorf("%s never fetched", u)
			if out != "" {
				t.Logf("its record: %v", readOutAllowing(t, out, got)[u])
			}
		case n > 1:
			repeats += n - 1
			t.Logf("fetched %d times: %s", n, u)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fetched %d distinct URLs, want %d", len(got), len(want))
	}
	if repeats > hosts {
		t.Errorf("%d repeated fetches, more than the in-flight window of %d", repeats, hosts)
	}
	if o := s.Overlaps(); len(o) > 0 {
		t.Errorf("politeness broken on %v", o)
	}
	t.Logf("%d URLs, %d repeated fetches after the interruption", len(want), repeats)
}

func waitRequests(t *testing.T, s *testsite.Site, n int, timeout time.Duration) {
	t.Helper()
	testutil.CheckFor(t, timeout, 5*time.Millisecond, func() error {
		total := 0
		for _, c := range s.Requests() {
			total += c
		}
		if total < n {
			return fmt.Errorf("crawl at %d requests, want %d", total, n)
		}
		return nil
	})
}

func TestResumeAfterCancel(t *testing.T) {
	s, seeds, want := generated(t)
	cfg := testConfig(t, seeds)
	cfg.PolitenessDelay = 20 * time.Millisecond
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
		done <- err
	}()
	waitRequests(t, s, len(want)/3, time.Minute)
	cancel() // what SIGINT does
	if err := <-done; err != app.ErrInterrupted {
		t.Fatalf("interrupted run: err = %v, want ErrInterrupted", err)
	}
	if n := len(pages(t, s)); n >= len(want) {
		t.Fatalf("crawl finished (%d URLs) before it was interrupted; make the site slower", n)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	var logs testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := app.RunAll(ctx2, cfg, app.RunOptions{Progress: &logs}, log); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	assertResumed(t, s, want, 4, cfg.Out)
}

func TestResumeAfterKill9(t *testing.T) { resumeAfterKill9(t, "20ms", 1) }

// Without a delay, a host's next task is handed when its fetch ends, before
// the page is parsed (frontier/ended.go), and the one after it when that
// one ends before the step recording it (sendThen): a kill can then find
// three of its tasks fetched and not reported done.
func TestResumeAfterKill9WithoutADelay(t *testing.T) { resumeAfterKill9(t, "0s", 3) }

// resumeAfterKill9 kills a crawl with the given politeness delay a third of
// the way through and resumes it: nothing is lost, and at most perHost
// fetches a host are made again.
func resumeAfterKill9(t *testing.T, delay string, perHost int) {
	s, seeds, want := generated(t)
	if delay == "0s" {
		s.Latency = 15 * time.Millisecond // slow enough to be killed midway
	}
	cfg := testConfig(t, seeds)
	seedsFile := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seedsFile, []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	arch := t.TempDir()
	// Each child's stderr is kept, and shown when the test fails.
	logDir := t.TempDir()
	var logs []string
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			"TRAWLER_TEST_CHILD=run",
			"TRAWLER_SEEDS_FILE="+seedsFile,
			"TRAWLER_DATA_DIR="+cfg.DataDir,
			"TRAWLER_ALLOW_PRIVATE=true",
			"TRAWLER_POLITENESS_DELAY="+delay,
			"TRAWLER_POLITENESS_FACTOR="+map[bool]string{true: "0", false: "10"}[delay == "0s"],
			"TRAWLER_PARTITION_COUNT=8",
			"TRAWLER_FETCH_TIMEOUT=10s",
			"TRAWLER_ROBOTS_RETRY=50ms",
			"TRAWLER_PROGRESS=false",
			"TRAWLER_OUT="+out,
			"TRAWLER_ARCHIVE="+arch,
		)
		f, err := os.Create(filepath.Join(logDir, fmt.Sprintf("child-%d.log", len(logs))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		logs = append(logs, f.Name())
		cmd.Stderr = f
		return cmd
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, b)
			}
		}
	})
	first := child()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitRequests(t, s, len(want)/3, time.Minute)
	if err := first.Process.Kill(); err != nil { // SIGKILL: no chance to clean up
		t.Fatal(err)
	}
	_ = first.Wait()
	if n := len(pages(t, s)); n >= len(want) {
		t.Fatalf("crawl finished (%d URLs) before it was killed; make the site slower", n)
	}
	t.Logf("killed after %d of %d URLs", len(pages(t, s)), len(want))

	second := child()
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	// The resumed crawl takes seconds; one that has not ended in a minute
	// is stuck: SIGQUIT makes it print its goroutines into its log.
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("resumed run: %v", err)
		}
	case <-time.After(time.Minute):
		_ = second.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatal("resumed run: still running after a minute (its goroutines are in its log)")
	}
	assertResumed(t, s, want, 4*perHost, out)
	// One line per fetch: a URL refetched in the in-flight window may have
	// two, nothing else.
	recs := readOutAllowing(t, out, pages(t, s))
	for _, u := range want {
		if recs[u] == nil {
			t.Errorf("--out lacks %s", u)
		}
	}
	// The archive is at least once: every URL in it, the ones written
	// before the kill too (the first run's .open files are recovered).
	archived := map[string]bool{}
	for _, r := range readWARC(t, arch, "*"+warc.Suffix) {
		if r.Get("WARC-Type") == warc.TypeResponse || r.Get("WARC-Type") == warc.TypeMetadata {
			archived[r.Get("WARC-Target-URI")] = true
		}
	}
	lines := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(arch, "*"+archive.JSONLSuffix))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var rec struct {
				URL string `json:"url"`
			}
			if json.Unmarshal([]byte(l), &rec) == nil {
				lines[rec.URL] = true
			}
		}
	}
	for _, u := range want {
		if !archived[u] {
			t.Errorf("the WARC files lack %s", u)
		}
		if !lines[u] {
			t.Errorf("the archive's JSON Lines lack %s", u)
		}
	}
}
