package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/hostileweb"
	"github.com/trawlerhq/trawler/pkg/warc"
)

// TestHostileWebCrawl crawls internal/hostileweb, ordinary pages among
// servers that misbehave in every way we know of (slow and endless bodies,
// bombs, broken framing, resets, huge headers, redirect loops, giant and
// deep pages, charsets, spider traps, a robots.txt that never answers, a
// name that does not resolve), as `trawler run` would with these flags,
// and checks that:
//
//   - the crawl ends by itself, without an error or a dead letter;
//   - every ordinary page is fetched once, with status 200;
//   - every hostile URL ends as the web's ground truth says (status, error
//     kind, truncation, title and charset), or is never requested when it
//     lies beyond a limit; every trap stays within the per-host budget;
//   - every URL any server was asked for has its record in --out;
//   - the process's peak resident memory grows by less than 512 MiB (1 GiB
//     under the race detector, whose shadow memory grows with every
//     allocation: 517 MiB was seen once in CI there, 86-127 MiB without it).
func TestHostileWebCrawl(t *testing.T) {
	const (
		maxBody = 256 << 10
		budget  = 60 // --max-pages-per-host: each ordinary host has fewer pages
		memCap  = 512 << 20
		// Under -race, shadow memory comes on top (see above).
		raceMemCap = 1 << 30
		// The trap limits, as the web is told them.
		pathDepth, repeats, params = 20, 2, 20
	)
	web, err := hostileweb.Start(hostileweb.Options{IP: "127.0.18.1", MaxBody: maxBody,
		MaxPathDepth: pathDepth, MaxRepeatedSegments: repeats, MaxQueryParams: params})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(web.Close)

	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	archiveDir := filepath.Join(dir, "archive")
	args := []string{
		"--seed", web.Seed, "--scope", "any", "--allow-private",
		"--data-dir", filepath.Join(dir, "data"), "--out", out, "--archive", archiveDir,
		"--politeness-delay", "0", "--politeness-factor", "1", "--politeness-max-gap", "500ms",
		// Long enough for an ordinary page on two busy cores under the race
		// detector (at 3s, whose header timeout is a third, a loaded CI
		// machine timed out ordinary pages); it bounds the slow cases.
		"--fetch-timeout", "6s",
		"--robots-retry", "100ms",
		"--max-body", strconv.Itoa(maxBody),
		"--max-pages-per-host", strconv.Itoa(budget),
		"--max-path-depth", strconv.Itoa(pathDepth), "--max-repeated-segments", strconv.Itoa(repeats),
		"--max-query-params", strconv.Itoa(params),
		"--resolver", "trawler", "--dns-servers", web.DNS,
		"--progress=false",
	}
	var cfg config.Config
	if err := cfg.Parse(newFlagSet(), args); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	peak := watchMemory(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	elapsed := time.Since(start)
	grown := peak()
	switch {
	case errors.Is(err, app.ErrInterrupted):
		t.Fatalf("the crawl did not end by itself within 3 minutes (%d fetched, %d queued, %d errors)", sum.Fetched, sum.Queued, sum.Errors)
	case err != nil:
		t.Fatalf("crawl: %v", err)
	}
	t.Logf("crawl ended by itself in %v: %d responses, %d fetches without one, peak RSS grew %d MiB",
		elapsed.Round(time.Millisecond), sum.Fetched, sum.Errors, grown>>20)
	if sum.DeadLetters != 0 || sum.Queued != 0 {
		t.Errorf("dead letters %d, URLs left queued %d; want none", sum.DeadLetters, sum.Queued)
	}
	limit := int64(memCap)
	if raceDetector {
		limit = raceMemCap
	}
	if grown > limit {
		t.Errorf("peak resident memory grew by %d MiB during the crawl, over %d MiB", grown>>20, limit>>20)
	}

	recs := readRecords(t, out)
	meta := readWARCMetadata(t, archiveDir)
	served := web.Requests()

	for _, u := range web.Ordinary {
		rec := recs[u]
		switch {
		case rec == nil:
			t.Errorf("ordinary page %s: no record (requested %d times)", u, served[u])
		case num(rec["status"]) != 200 || str(rec["error"]) != "":
			t.Errorf("ordinary page %s: status %v, error %q; want 200", u, rec["status"], rec["error"])
		}
		if served[u] > 1 {
			fetchedAgain(t, "ordinary page %s requested %d times, want once", u, served[u])
		}
	}

	for _, c := range web.Cases {
		checkCase(t, c, recs[c.URL], meta[c.URL], served[c.URL])
	}

	for _, tr := range web.Traps {
		got := web.OnHost(tr.Base)
		switch {
		case tr.Fetches > 0 && len(got) != tr.Fetches:
			t.Errorf("trap %q: %d URLs fetched, want %d (its trap limit): %v", tr.Class, len(got), tr.Fetches, got)
		case len(got) > budget:
			t.Errorf("trap %q: %d URLs fetched, over the per-host budget of %d", tr.Class, len(got), budget)
		case len(got) < 10:
			t.Errorf("trap %q: only %d URLs fetched; the crawl should have entered it: %v", tr.Class, len(got), got)
		}
		t.Logf("trap %-45s left after %d URLs", tr.Class, len(got))
	}

	// Every URL a server was asked for is in a final state: recorded.
	for u, n := range served {
		if strings.HasSuffix(u, "/robots.txt") {
			continue
		}
		if recs[u] == nil {
			t.Errorf("%s was requested %d times but has no record in --out", u, n)
		}
	}
}

// checkCase compares a hostile URL's --out record and WARC metadata with
// what the hostile web says a correct crawler records.
func checkCase(t *testing.T, c hostileweb.Case, rec map[string]any, meta warc.Parsed, requests int) {
	t.Helper()
	w := c.Want
	name := fmt.Sprintf("%s (%s)", c.Class, c.URL)
	if w.NotFetched {
		if requests != 0 || rec != nil {
			t.Errorf("%s: requested %d times, record %v; want it left alone", name, requests, rec)
		}
		return
	}
	if rec == nil {
		t.Errorf("%s: no record in --out (requested %d times)", name, requests)
		return
	}
	if requests > 1 {
		fetchedAgain(t, "%s: requested %d times, want at most once", name, requests)
	}
	errText, kind := str(rec["error"]), meta.Get("error-kind")
	t.Logf("%-50s status %3v, kind %-8q body %7s B, truncated %-5v %q", c.Class, rec["status"], kind, meta.Get("body-size"), meta.Get("truncated") == "true", errText)
	if status := int(num(rec["status"])); status != w.Status {
		t.Errorf("%s: status %d, want %d (error %q)", name, status, w.Status, errText)
	}
	switch {
	case len(w.ErrKinds) == 0 && (errText != "" || kind != ""):
		t.Errorf("%s: error %q (kind %q), want none", name, errText, kind)
	case len(w.ErrKinds) > 0 && !slices.Contains(w.ErrKinds, kind):
		t.Errorf("%s: error kind %q (%q), want one of %v", name, kind, errText, w.ErrKinds)
	}
	if !strings.Contains(errText, w.ErrContains) {
		t.Errorf("%s: error %q does not say %q", name, errText, w.ErrContains)
	}
	if truncated := meta.Get("truncated") == "true"; truncated != w.Truncated {
		t.Errorf("%s: body truncated %v (body-size %s), want %v", name, truncated, meta.Get("body-size"), w.Truncated)
	}
	if truncated, _ := rec["truncated"].(bool); truncated != w.ParsedTruncated {
		t.Errorf("%s: parsed document truncated %v, want %v (error %q)", name, truncated, w.ParsedTruncated, errText)
	}
	if w.Title != "" && str(rec["title"]) != w.Title {
		t.Errorf("%s: title %q, want %q", name, rec["title"], w.Title)
	}
	if w.Charset != "" && str(rec["charset"]) != w.Charset {
		t.Errorf("%s: charset %q, want %q", name, rec["charset"], w.Charset)
	}
	if w.Outlink != "" {
		links, _ := rec["outlinks"].([]any)
		if !slices.ContainsFunc(links, func(l any) bool { return l == w.Outlink }) {
			t.Errorf("%s: outlinks %v miss %s", name, links, w.Outlink)
		}
	}
}

// fetchedAgain fails the test: every URL is fetched once. (Under load a
// frontier intake message could wait in the client's pull buffer past its
// ack wait and arrive twice in one batch, queuing its URLs twice; the
// frontier now applies a stream sequence once per batch.)
func fetchedAgain(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Errorf(format, args...)
}

// readRecords reads --out, one record per URL; a URL recorded more than
// once is an error that names the records' tasks and times, which tell
// whether the frontier issued it twice (two tasks) or a record was
// repeated downstream (one task).
func readRecords(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("--out line %q: %v", line, err)
		}
		u := str(rec["url"])
		if prev := out[u]; prev != nil {
			fetchedAgain(t, "%s recorded twice: task %v at %v (status %v, error %q), then task %v at %v (status %v, error %q)", u,
				prev["task_id"], prev["fetched_at"], prev["status"], prev["error"], rec["task_id"], rec["fetched_at"], rec["status"], rec["error"])
		}
		out[u] = rec
	}
	return out
}

func num(v any) float64 { f, _ := v.(float64); return f }
func str(v any) string  { s, _ := v.(string); return s }

// readWARC returns the records of every file of dir matching pattern (a
// filepath.Glob pattern), in file order; it fails the test when none does.
func readWARC(t *testing.T, dir, pattern string) []warc.Parsed {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no WARC files %s in %s (%v)", pattern, dir, err)
	}
	var out []warc.Parsed
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := warc.ReadAll(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, recs...)
	}
	return out
}

// readWARCMetadata returns the metadata record of each URL of an archive:
// error kind, truncation and body size, which --out does not carry.
func readWARCMetadata(t *testing.T, dir string) map[string]warc.Parsed {
	t.Helper()
	out := map[string]warc.Parsed{}
	for _, r := range readWARC(t, dir, "*"+warc.Suffix) {
		if r.Get("WARC-Type") != "metadata" {
			continue
		}
		// The block is "name: value" lines; expose them as fields.
		p := warc.Parsed{}
		for _, line := range strings.Split(string(r.Block), "\r\n") {
			if name, value, ok := strings.Cut(line, ": "); ok {
				p.Fields = append(p.Fields, warc.Field{Name: name, Value: value})
			}
		}
		out[r.Get("WARC-Target-URI")] = p
	}
	return out
}

// watchMemory resets the process's peak resident set size (VmHWM) and
// returns a function giving how far above the resident size at the reset
// the peak went. Where the peak cannot be reset (not Linux), it samples
// the resident size every 20 ms instead.
func watchMemory(t *testing.T) func() int64 {
	t.Helper()
	runtime.GC()
	base := procStatus(t, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err == nil {
		return func() int64 { return procStatus(t, "VmHWM") - base }
	}
	var peak atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		for {
			peak.Store(max(peak.Load(), procStatus(t, "VmRSS")))
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		return peak.Load() - base
	}
}

// procStatus is a size field of /proc/self/status in bytes; 0 where there
// is none.
func procStatus(t *testing.T, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("/proc/self/status %s: %v", line, err)
			}
			return kb << 10
		}
	}
	return 0
}
