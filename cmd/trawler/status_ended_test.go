package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
)

// Pages a fetcher hands to its parser in process (run, fetcher
// --with-parser) never enter the pages stream: status counts them from the
// live fetchers' heartbeats, not as 0.
func TestStatusCountsPagesParsedInProcess(t *testing.T) {
	now := time.Now()
	beats := []heartbeat.Beat{
		{Service: "fetcher", Services: []string{"fetcher", "parser"}, At: now, Counters: map[string]float64{
			"trawler_fetcher_pages_total": 40, "trawler_fetcher_errors_total": 2,
		}},
		{Service: "fetcher", Services: []string{"fetcher"}, At: now, Counters: map[string]float64{"trawler_fetcher_pages_total": 8}},
	}
	var rep statusReport
	rep.Pages.Fetched = 5 // published on pages.fetched
	addBeats(&rep, beats, now)
	if rep.Pages.Fetched != 50 {
		t.Errorf("fetched = %d, want the fetchers' 50", rep.Pages.Fetched)
	}
	if rep.Replicas["parser"] != 1 || rep.Replicas["fetcher"] != 2 {
		t.Errorf("replicas = %v, want fetcher 2, parser 1", rep.Replicas)
	}
	rep = statusReport{}
	rep.Pages.Fetched = 500 // the stream's count, over the crawl's life
	addBeats(&rep, beats, now)
	if rep.Pages.Fetched != 500 {
		t.Errorf("fetched = %d, want the stream's 500", rep.Pages.Fetched)
	}
}

// status sums the links the parsers excluded, by reason, over the live
// processes' heartbeats, and shows them in its JSON and on its screen in
// the run summary's words (issue 18); a silent process's counters are left
// out.
func TestStatusShowsExcludedLinks(t *testing.T) {
	now := time.Now()
	beats := []heartbeat.Beat{
		{Service: "parser", Services: []string{"parser"}, At: now, Counters: map[string]float64{
			`trawler_parser_links_excluded_total{reason="url_length"}`:       3,
			`trawler_parser_links_excluded_total{reason="repeated_segment"}`: 2,
			`trawler_parser_links_excluded_total{reason="path_depth"}`:       0,
		}},
		{Service: "parser", Services: []string{"parser"}, At: now, Counters: map[string]float64{
			`trawler_parser_links_excluded_total{reason="url_length"}`: 4,
		}},
		{Service: "parser", Services: []string{"parser"}, At: now.Add(-time.Minute), Counters: map[string]float64{ // silent
			`trawler_parser_links_excluded_total{reason="query_params"}`: 100,
		}},
	}
	var rep statusReport
	addBeats(&rep, beats, now)
	data, _ := json.Marshal(rep)
	var back struct {
		Excluded map[string]float64 `json:"excluded"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Excluded) != 2 || back.Excluded["url_length"] != 7 || back.Excluded["repeated_segment"] != 2 {
		t.Errorf("excluded in JSON = %v, want url_length 7, repeated_segment 2", back.Excluded)
	}
	var b strings.Builder
	if err := show(&b, rep, false, false); err != nil {
		t.Fatal(err)
	}
	if want := "excluded  9 links: 7 url length, 2 repeated segment\n"; !strings.Contains(b.String(), want) {
		t.Errorf("screen lacks %q:\n%s", want, b.String())
	}

	// None excluded: no line.
	rep = statusReport{}
	addBeats(&rep, beats[2:], now)
	b.Reset()
	show(&b, rep, false, false)
	if strings.Contains(b.String(), "excluded") {
		t.Errorf("screen has an excluded line with nothing excluded:\n%s", b.String())
	}
}

// The URLs the per-host limits drop are told apart by reason, in the run
// summary (over the crawl's life) and on the status screen: one page
// linking to 6 more of its host, with a queue cap of 4 and a budget of 3
// pages, has 2 links pushed out at intake and the 2 left over the budget
// dropped at the next pop (issue 18 #2).
func TestRunSummaryDroppedRow(t *testing.T) {
	s := testsite.New()
	a := s.AddHost(t, "a", "127.0.0.4")
	var links []string
	for i := 1; i <= 6; i++ {
		links = append(links, a.URL(fmt.Sprintf("/%d", i)))
		a.Set(fmt.Sprintf("/%d", i), testsite.Page{})
	}
	a.Set("/", testsite.Page{Links: links})
	dir := t.TempDir()
	code, stdout, stderr := trawler(t, "run", "--seed", a.URL("/"), "--allow-private", "--ignore-robots", "--data-dir", dir+"/data",
		"--politeness-delay", "1ms", "--partition-count", "2", "--progress=false",
		"--max-pages-per-host", "3", "--max-queue-per-host", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"  fetched    3 pages",
		"  dropped    4 URLs by the per-host limits: 2 over --max-pages-per-host, 2 pushed out of a queue full at --max-queue-per-host\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

func TestStatusShowsDroppedURLs(t *testing.T) {
	var rep statusReport
	rep.Frontier.DroppedBudget, rep.Frontier.DroppedQueue = 5, 1
	var b strings.Builder
	show(&b, rep, false, false)
	if want := "dropped   6 URLs by the per-host limits: 5 over --max-pages-per-host, 1 pushed out of a queue full at --max-queue-per-host\n"; !strings.Contains(b.String(), want) {
		t.Errorf("screen lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	show(&b, rep, true, false)
	if want := `"dropped_host_budget":5,"dropped_host_queue":1`; !strings.Contains(b.String(), want) {
		t.Errorf("JSON lacks %s:\n%s", want, b.String())
	}
	rep.Frontier.DroppedBudget, rep.Frontier.DroppedQueue = 0, 0
	b.Reset()
	show(&b, rep, false, false)
	if strings.Contains(b.String(), "dropped") {
		t.Errorf("a dropped line with nothing dropped:\n%s", b.String())
	}
}

// status shows what live processes gave up without a response (issue 18):
// hosts whose robots.txt stayed unreachable, URLs over --max-deferrals and
// URLs lost over --max-attempts, in its JSON and on its screen.
func TestStatusShowsGivenUp(t *testing.T) {
	now := time.Now()
	beats := []heartbeat.Beat{
		{Service: "fetcher", Services: []string{"fetcher"}, At: now, Counters: map[string]float64{
			"trawler_fetcher_robots_given_up_hosts_total": 2}},
		{Service: "frontier", Services: []string{"frontier"}, At: now, Counters: map[string]float64{
			"trawler_frontier_urls_deferred_out_total": 3, "trawler_frontier_urls_dropped_total": 1}},
	}
	var rep statusReport
	addBeats(&rep, beats, now)
	data, _ := json.Marshal(rep)
	var back struct {
		GivenUp map[string]float64 `json:"given_up"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.GivenUp["hosts"] != 2 || back.GivenUp["urls_deferred_out"] != 3 || back.GivenUp["urls_lost"] != 1 {
		t.Errorf("given_up in JSON = %v", back.GivenUp)
	}
	var b strings.Builder
	if err := show(&b, rep, false, false); err != nil {
		t.Fatal(err)
	}
	if want := "given up  2 hosts (robots.txt unreachable"; !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "3 URLs handed back") {
		t.Errorf("screen lacks %q:\n%s", want, b.String())
	}
	rep = statusReport{}
	addBeats(&rep, nil, now)
	b.Reset()
	show(&b, rep, false, false)
	if strings.Contains(b.String(), "given up") {
		t.Errorf("screen has a given-up line with nothing given up:\n%s", b.String())
	}
}

// status sums the parsers' near-duplicate counters into its JSON and says
// them on screen; a crawl without any shows no line.
func TestStatusShowsNearDuplicates(t *testing.T) {
	now := time.Now()
	beats := []heartbeat.Beat{
		{Service: "parser", Services: []string{"parser"}, At: now, Counters: map[string]float64{
			"trawler_parser_pages_near_duplicate_total": 3, "trawler_parser_links_near_duplicate_total": 40}},
		{Service: "parser", Services: []string{"parser"}, At: now, Counters: map[string]float64{
			"trawler_parser_pages_near_duplicate_total": 2}},
	}
	var rep statusReport
	addBeats(&rep, beats, now)
	var js, screen strings.Builder
	if err := show(&js, rep, true, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"near_duplicates":{"pages":5,"links_not_followed":40}`) {
		t.Errorf("JSON lacks the near-duplicates: %s", js.String())
	}
	if err := show(&screen, rep, false, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(screen.String(), "near-dups 5 pages near-duplicates of earlier ones, 40 of their links not followed") {
		t.Errorf("screen:\n%s", screen.String())
	}
	var none statusReport
	addBeats(&none, beats[:0], now)
	screen.Reset()
	_ = show(&screen, none, false, false)
	if strings.Contains(screen.String(), "near-dups") {
		t.Errorf("no near-duplicates, yet:\n%s", screen.String())
	}
}
