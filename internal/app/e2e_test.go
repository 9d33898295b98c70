package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// fixture is the small web of the end-to-end tests: three seed hosts, one
// host outside the scope, cycles, duplicate links, 404s, redirects within and
// across hosts, a server error, malformed HTML, an oversized body, a non-HTML
// file and a link to a host that does not answer.
type fixture struct {
	site     *testsite.Site
	a, b, c  *testsite.Host
	external *testsite.Host
	dead     string // base URL of a port nobody listens on
	seeds    []string
}

func newFixture(t testing.TB) *fixture {
	s := testsite.New()
	f := &fixture{
		site:     s,
		a:        s.AddHost(t, "a", "127.0.0.2"),
		b:        s.AddHost(t, "b", "127.0.0.3"),
		c:        s.AddHost(t, "c", "127.0.0.4"),
		external: s.AddHost(t, "external", "127.0.0.5"),
		dead:     "http://127.0.0.6:9", // discard port: connection refused
	}
	a, b, c, x := f.a, f.b, f.c, f.external
	a.Set("/", testsite.Page{Links: []string{a.URL("/a1"), a.URL("/a2"), a.URL("/a2"), a.URL("/a1#section"),
		a.URL("/missing"), a.URL("/moved"), b.URL("/"), x.URL("/x1"), a.URL("/doc.pdf")}})
	a.Set("/a1", testsite.Page{Links: []string{a.URL("/"), a.URL("/a2")}})
	a.Set("/a2", testsite.Page{Links: []string{a.URL("/a1"), a.URL("/deep/1"), a.URL("/a2?q=1")}})
	a.Set("/a2?q=1", testsite.Page{Links: []string{a.URL("/a2")}})
	a.Set("/deep/1", testsite.Page{Links: []string{a.URL("/deep/2")}})
	a.Set("/deep/2", testsite.Page{Links: []string{a.URL("/deep/3"), c.URL("/")}})
	a.Set("/deep/3", testsite.Page{Links: []string{a.URL("/")}})
	a.Set("/moved", testsite.Page{Redirect: a.URL("/a3")})
	a.Set("/a3", testsite.Page{Links: []string{b.URL("/b2")}})
	a.Set("/doc.pdf", testsite.Page{Type: "application/pdf", Body: "%PDF-1.4 <a href=\"/never\">not html</a>"})
	b.Set("/", testsite.Page{Links: []string{b.URL("/b1"), a.URL("/"), b.URL("/error"), b.URL("/hop"), x.URL("/x2")}})
	b.Set("/b1", testsite.Page{Links: []string{b.URL("/"), b.URL("/b1"), f.dead + "/"}})
	b.Set("/b2", testsite.Page{Links: []string{b.URL("/b1")}})
	b.Set("/error", testsite.Page{Status: 500, Links: []string{b.URL("/never-followed")}})
	b.Set("/hop", testsite.Page{Redirect: c.URL("/welcome"), Status: 302})
	c.Set("/", testsite.Page{Redirect: c.URL("/welcome")})
	c.Set("/welcome", testsite.Page{Links: []string{c.URL("/bad"), c.URL("/big"), c.URL("/binary")}})
	c.Set("/bad", testsite.Page{Links: []string{c.URL("/c1"), c.URL("/c2"), c.URL("/c3"), c.URL("/c4")}, Body: `<html><body><a href="/c1">ok<a href='/c2'><div><a href=/c3 <<<>>> <a href="/c4"` +
		"\x00\xff<a href=\"http://[::1\">broken</a><a href=\"/c1\"></a></table></td>"})
	for _, p := range []string{"/c1", "/c2", "/c3", "/c4"} {
		c.Set(p, testsite.Page{})
	}
	// Larger than the body cap; the links past the cap are never seen.
	c.Set("/big", testsite.Page{Links: []string{c.URL("/c1")}, Size: 3 << 20})
	c.Set("/binary", testsite.Page{Type: "application/octet-stream", Body: "\x00\x01\x02<a href=\"/c9\">"})
	x.Set("/x1", testsite.Page{})
	x.Set("/x2", testsite.Page{})
	f.seeds = []string{a.URL("/"), b.URL("/"), c.URL("/"), f.dead + "/"}
	return f
}

// expected is every URL the crawl must fetch: reachable from the seeds
// without leaving the seeds' hosts.
func (f *fixture) expected() []string {
	hosts := map[string]bool{}
	for _, s := range f.seeds {
		u, _ := url.Parse(s)
		hosts[u.Host] = true
	}
	all := f.site.Reachable(f.seeds, func(u *url.URL) bool { return hosts[u.Host] && u.Scheme == "http" }, -1)
	// Fragments are not part of what is fetched; the dead host serves nothing.
	var out []string
	for _, u := range all {
		if !strings.Contains(u, "#") && !strings.HasPrefix(u, f.dead) {
			out = append(out, u)
		}
	}
	return out
}

func testConfig(t testing.TB, seeds []string) config.Config {
	var cfg config.Config
	if err := cfg.Parse(newFlagSet(), nil); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.Seeds = seeds
	cfg.AllowPrivate = true
	cfg.PolitenessDelay = 5 * time.Millisecond
	// Generous: CI machines are slow under the race detector, and a
	// timed-out fetch is final (recorded, not retried), which would
	// look like a lost URL to these tests.
	cfg.FetchTimeout = 30 * time.Second
	cfg.PartitionCount = 8
	cfg.MaxBodyBytes = 1 << 20
	cfg.Progress = false
	cfg.RobotsRetry = 50 * time.Millisecond
	return cfg
}

func testLogger(testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// assertFetchedOnce checks that the site served exactly want, each URL once,
// and never two requests at once to one host.
func assertFetchedOnce(t *testing.T, site *testsite.Site, want []string) {
	t.Helper()
	got := pages(t, site)
	var keys []string
	for u, n := range got {
		keys = append(keys, u)
		if n != 1 {
			t.Errorf("%s fetched %d times, want once", u, n)
		}
	}
	sort.Strings(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("fetched set differs\n got: %v\nwant: %v\nmissing: %v\nextra: %v", keys, want, diff(want, keys), diff(keys, want))
	}
	if o := site.Overlaps(); len(o) > 0 {
		t.Errorf("hosts served concurrent requests (politeness broken): %v", o)
	}
}

// pages returns the site's requests other than robots.txt, after checking
// that each host's robots.txt was fetched at most once.
func pages(t *testing.T, site *testsite.Site) map[string]int {
	t.Helper()
	out := map[string]int{}
	for u, n := range site.Requests() {
		if strings.HasSuffix(u, "/robots.txt") {
			if n > 1 {
				t.Errorf("%s fetched %d times, want at most once per crawl", u, n)
			}
			continue
		}
		out[u] = n
	}
	return out
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func readOut(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	return readOutAllowing(t, path, nil)
}

// readParsed reads --out as parsed documents keyed by their URL with base
// cut off (a path, for one host's crawl).
func readParsed(t *testing.T, path, base string) map[string]messages.Parsed {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]messages.Parsed{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var d messages.Parsed
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("--out line %q: %v", line, err)
		}
		docs[strings.TrimPrefix(d.URL, base)] = d
	}
	return docs
}

// readOutAllowing reads --out; a URL may appear more than once only if
// refetched says it was fetched that many times.
func readOutAllowing(t *testing.T, path string, refetched map[string]int) map[string]map[string]any {
	t.Helper()
	lines := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("--out line %q: %v", sc.Text(), err)
		}
		u, _ := rec["url"].(string)
		lines[u]++
		if lines[u] > max(refetched[u], 1) {
			t.Errorf("--out has %s %d times", u, lines[u])
		}
		out[u] = rec
	}
	return out
}

func TestRunAllCrawlsExactlyTheReachableSite(t *testing.T) {
	f := newFixture(t)
	cfg := testConfig(t, f.seeds)
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatalf("RunAll: %v", err)
	}
	want := f.expected()
	assertFetchedOnce(t, f.site, want)
	for _, h := range []*testsite.Host{f.a, f.b, f.c} {
		if g := h.MinGap(); g < cfg.PolitenessDelay {
			t.Errorf("host %s: requests %s apart, want at least --politeness-delay %s", h.Name, g, cfg.PolitenessDelay)
		}
	}
	if n := len(f.external.Requests()); n != 0 {
		t.Errorf("out-of-scope page fetched %d times", n)
	}

	// Every fetched URL is in --out once, with the documented fields; the
	// dead host's fetch is there with its error.
	recs := readOut(t, cfg.Out)
	for _, u := range append(want, f.dead+"/") {
		rec, ok := recs[u]
		if !ok {
			t.Errorf("--out lacks %s", u)
			continue
		}
		for _, field := range []string{"url", "status", "fetched_at", "content_type", "depth", "outlinks"} {
			if _, ok := rec[field]; !ok && !(field == "content_type" && u == f.dead+"/") {
				t.Errorf("--out record of %s lacks %q: %v", u, field, rec)
			}
		}
	}
	if len(recs) != len(want)+1 {
		t.Errorf("--out has %d records, want %d", len(recs), len(want)+1)
	}
	if rec := recs[f.dead+"/"]; rec != nil && rec["error"] == nil {
		t.Errorf("unreachable host recorded without error: %v", rec)
	}
	if rec := recs[f.a.URL("/deep/3")]; rec != nil && rec["depth"] != float64(4) {
		t.Errorf("depth of /deep/3 = %v, want 4", rec["depth"])
	}
	if rec := recs[f.c.URL("/big")]; rec != nil && rec["status"] != float64(200) {
		t.Errorf("oversized page: %v", rec)
	}
	if sum.Fetched != int64(len(want)) || sum.Errors != 1 {
		t.Errorf("summary: fetched %d errors %d, want %d and 1", sum.Fetched, sum.Errors, len(want))
	}
	// The crawl's page count: its pages went to the parser in process, not
	// through pages.fetched, and are counted all the same.
	if sum.Total != uint64(len(want)+1) {
		t.Errorf("summary: %d pages in the crawl, want %d", sum.Total, len(want)+1)
	}
	t.Logf("crawled %d URLs in %s", len(want), sum.Elapsed)

	// Running again on the same data dir has nothing left to do.
	again, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatalf("second RunAll: %v", err)
	}
	if again.Fetched != 0 {
		t.Errorf("second run fetched %d pages, want 0", again.Fetched)
	}
	// Nothing could read pages.parsed (no listener, --out written in
	// process): the pages were counted by the store instead, and the count
	// outlives the run.
	if again.Total != sum.Total {
		t.Errorf("second run: %d pages in the crawl, want the first run's %d", again.Total, sum.Total)
	}
	st, err := store.OpenBolt(filepath.Join(cfg.DataDir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := st.Stats(ctx, nil)
	st.Close()
	if err != nil || stats.ParsedInProcess != sum.Total {
		t.Errorf("pages counted in process: %d (%v), want %d: none on pages.parsed", stats.ParsedInProcess, err, sum.Total)
	}
	assertFetchedOnce(t, f.site, want)
}

func TestRunAllMaxDepthAndMaxPages(t *testing.T) {
	f := newFixture(t)
	cfg := testConfig(t, f.seeds[:1])
	cfg.MaxDepth = 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	hosts := map[string]bool{mustHost(f.a.Base): true}
	want := f.site.Reachable(f.seeds[:1], func(u *url.URL) bool { return hosts[u.Host] }, 1)
	want = slices.DeleteFunc(want, func(u string) bool { return strings.Contains(u, "#") })
	assertFetchedOnce(t, f.site, want)

	g := newFixture(t)
	cfg = testConfig(t, g.seeds[:3])
	cfg.MaxPages = 5
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range pages(t, g.site) {
		total += n
	}
	if total != 5 || sum.Fetched+sum.Errors != 5 {
		t.Errorf("--max-pages 5: site saw %d requests, summary %d+%d", total, sum.Fetched, sum.Errors)
	}
	if sum.Queued == 0 {
		t.Errorf("--max-pages 5 left nothing queued; the fixture has more")
	}
}

func mustHost(base string) string {
	u, _ := url.Parse(base)
	return u.Host
}

func TestRunAllBadSeeds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := testConfig(t, []string{"not a url", "ftp://example.org/", "http://", "mailto:x@y"})
	_, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "no valid seed") || !strings.Contains(err.Error(), `"ftp://example.org/"`) {
		t.Fatalf("all seeds invalid: err = %v, want each named and 'no valid seed'", err)
	}

	// Valid seeds go on despite invalid ones.
	f := newFixture(t)
	cfg = testConfig(t, append([]string{"::bad::", "http://[::1"}, f.seeds...))
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	assertFetchedOnce(t, f.site, f.expected())
}

func TestRunAllRefusesPrivateAddressesByDefault(t *testing.T) {
	f := newFixture(t)
	cfg := testConfig(t, f.seeds[:1])
	cfg.AllowPrivate = false
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The seed is refused at once (see TestRunAllRefusedSeedsFailAtOnce).
	_, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if !errors.Is(err, app.ErrSeedsRefused) || !strings.Contains(err.Error(), "allow-private") {
		t.Errorf("err = %v, want every seed refused, naming --allow-private", err)
	}
	if n := len(f.site.Requests()); n != 0 { // not even robots.txt
		t.Errorf("site got %d requests without --allow-private", n)
	}
}
