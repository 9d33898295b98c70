package main

import (
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
)

// `trawler run` ends with a row of the links the limits excluded, by
// reason, right after the parsed row (issue 18); reasons with none are left
// out.
func TestRunSummaryExcludedRow(t *testing.T) {
	s := testsite.New()
	a := s.AddHost(t, "a", "127.0.0.3")
	a.Set("/", testsite.Page{Links: []string{
		a.URL("/ok"),
		a.URL("/" + strings.Repeat("long", 70)), // url length
		a.URL("/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21"), // path depth
		a.URL("/a/b/a/b/a/b"), // repeated segment
		a.URL("/x/b/x/y/x/z"), // repeated segment
	}})
	a.Set("/ok", testsite.Page{})
	dir := t.TempDir()
	code, stdout, stderr := trawler(t, "run", "--seed", a.URL("/"), "--allow-private", "--ignore-robots", "--data-dir", dir+"/data",
		"--politeness-delay", "1ms", "--partition-count", "2", "--progress=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "  excluded   4 links: 1 url length, 1 path depth, 2 repeated segment\n"
	i, j := strings.Index(stdout, "  parsed "), strings.Index(stdout, want)
	if i < 0 || j < 0 || strings.Count(stdout[i:j], "\n") != 1 {
		t.Errorf("summary lacks %q right after the parsed row:\n%s", want, stdout)
	}
	if !strings.Contains(stdout, "  fetched    2 pages") {
		t.Errorf("fetched other than / and /ok:\n%s", stdout)
	}
}

// The run's summary counts near-duplicates on its parsed row, and the links
// not followed on them.
func TestSummaryCountsNearDuplicates(t *testing.T) {
	var b strings.Builder
	printSummary(&b, app.Summary{Counters: map[string]float64{
		"trawler_parser_pages_total":                10,
		"trawler_parser_pages_near_duplicate_total": 2,
		"trawler_parser_links_near_duplicate_total": 5,
	}}, "")
	if !strings.Contains(b.String(), "10 pages, 0 links, 0 handed to dedup; 2 near-duplicates (5 of their links not followed)") {
		t.Errorf("summary:\n%s", b.String())
	}
	b.Reset()
	printSummary(&b, app.Summary{Counters: map[string]float64{"trawler_parser_pages_total": 10}}, "")
	if strings.Contains(b.String(), "near-duplicates") {
		t.Errorf("no near-duplicates, yet:\n%s", b.String())
	}
}

// A page cut at --max-body loses the links past the cut: the run's summary
// says how many pages were cut and what to do, instead of a crawl that is
// quietly incomplete (the SQLite docs' 1.85 MB requirements.html).
func TestRunSummarySaysPagesWereCut(t *testing.T) {
	s := testsite.New()
	a := s.AddHost(t, "a", "127.0.0.3")
	a.Set("/", testsite.Page{Links: []string{a.URL("/big"), a.URL("/small")}})
	a.Set("/big", testsite.Page{Size: 64 << 10})
	a.Set("/small", testsite.Page{})
	dir := t.TempDir()
	code, stdout, stderr := trawler(t, "run", "--seed", a.URL("/"), "--allow-private", "--ignore-robots", "--data-dir", dir+"/data",
		"--politeness-delay", "1ms", "--partition-count", "2", "--progress=false", "--max-body", "16384")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "  cut        1 pages cut at --max-body: their text and links past the cut are left out (raise --max-body to keep them)\n"; !strings.Contains(stdout, want) {
		t.Errorf("summary lacks %q:\n%s", want, stdout)
	}
	code, stdout, stderr = trawler(t, "run", "--seed", a.URL("/"), "--allow-private", "--ignore-robots", "--data-dir", dir+"/data2",
		"--politeness-delay", "1ms", "--partition-count", "2", "--progress=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "  cut ") {
		t.Errorf("nothing was cut at the default --max-body, yet:\n%s", stdout)
	}
}
