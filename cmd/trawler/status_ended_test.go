package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/heartbeat"
)

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
