package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// TestRunTraceDirFeedsCachesim crawls four hosts that link to each other
// with --trace-dir (and --splitter-cache-size 0, so dedup receives every
// link), and replays the traces it wrote with cachesim: the
// full trace holds every link dedup received, the cross subtrace the links
// between hosts of different partitions.
func TestRunTraceDirFeedsCachesim(t *testing.T) {
	var bases []string
	for i := range 4 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			next := bases[(i+1)%len(bases)]
			switch r.URL.Path {
			case "/":
				fmt.Fprintf(w, `<a href="/a">a</a> <a href="/b">b</a> <a href="%s/">next</a> <a href="%s/a">next a</a>`, next, next)
			default:
				fmt.Fprintf(w, `<a href="/">home</a> <a href="%s/b">next b</a>`, next)
			}
		}))
		defer srv.Close()
		bases = append(bases, srv.URL)
	}
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces")
	args := []string{"run", "--allow-private", "--data-dir", filepath.Join(dir, "data"), "--trace-dir", traces,
		"--splitter-cache-size", "0", "--politeness-delay", "1ms", "--progress=false",
		// run's own default of 4 partitions put all four hosts in one
		// partition, and the cross trace empty, once in 64 runs.
		"--partition-count", "32"}
	for _, b := range bases {
		args = append(args, "--seed", b+"/")
	}
	code, stdout, stderr := trawler(t, args...)
	if code != 0 || !strings.Contains(stdout, "fetched 12 pages") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	full, _ := filepath.Glob(filepath.Join(traces, "full-*.urltrace"))
	cross, _ := filepath.Glob(filepath.Join(traces, "cross-*.urltrace"))
	if len(full) != 1 || len(cross) != 1 {
		t.Fatalf("trace files: full %v, cross %v", full, cross)
	}
	fps, h, torn, err := urltrace.ReadFile(full[0], urltrace.AllPartitions)
	if err != nil || torn || h.Kind != urltrace.Full {
		t.Fatalf("full trace: %+v torn %v err %v", h, torn, err)
	}
	// The 4 seeds, 4 links on each home page and 2 on each other page: each
	// page's links once (more only if a page was parsed twice).
	const links = 4 + 4*4 + 8*2
	if len(fps) < links || !slices.Contains(fps, urlx.Fingerprint(bases[0]+"/b")) {
		t.Errorf("full trace: %d fingerprints, want at least %d with %s/b's", len(fps), links, bases[0])
	}
	cfps, h, torn, err := urltrace.ReadFile(cross[0], urltrace.AllPartitions)
	if err != nil || torn || h.Kind != urltrace.Cross || len(cfps) == 0 {
		// Empty only if all four hosts fell in one partition: odds 1/32³.
		t.Fatalf("cross trace: %+v torn %v err %v, %d fingerprints", h, torn, err, len(cfps))
	}

	for _, path := range []string{full[0], cross[0]} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"cachesim", "--trace", path, "--sizes", "2^2..2^6"}, &out, &errOut); code != 0 {
			t.Fatalf("cachesim %s: exit %d: %s", path, code, errOut.String())
		}
		if rows := strings.Count(out.String(), "\n| 2^"); rows != 5 {
			t.Errorf("cachesim %s: %d size rows:\n%s", path, rows, out.String())
		}
	}
}
