package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/bench/websim"
)

// The report has the main case's tables, the politeness-bound case's share
// of hosts/delay and the few-hosts case's turnaround, from made-up runs.
func TestReportTables(t *testing.T) {
	run := func(mode string, pages int, wall time.Duration, medianGap time.Duration) result {
		r := result{mode: mode, m: measured{wall: wall, cpu: 2 * time.Second, rss: 200 << 20, written: int64(pages) * 50000},
			audit: websim.Audit{Fetched: pages, MaxConcurrent: 1, MedianGapPages: medianGap, MeanGapPages: medianGap},
			rssAt: [3]float64{100, 150, 200}}
		if strings.HasPrefix(mode, "run") {
			r.m.counters = map[string]float64{"trawler_store_commits_total": float64(pages) / 4}
		}
		return r
	}
	web := websim.Config{Seed: 1, Hosts: 200, Pages: 500, Port: 80, Discovery: true, Block: 1}
	cases := []caseResults{
		{benchCase: benchCase{name: "main", delay: 100 * time.Millisecond, runs: 1}, web: web,
			results: []result{run("run-out", 1000, 2*time.Second, 150*time.Millisecond), run("cluster", 1000, 4*time.Second, 0), run("colly", 1000, time.Second, 0)}},
		{benchCase: benchCase{name: "polite-20", delay: 100 * time.Millisecond, runs: 1}, web: websim.Config{Hosts: 20, Pages: 150},
			truth:   politeTruth(20, 75, 150), // 1,575 URLs, the largest host 150: a bound of 1,575 / 15 s
			results: []result{run("colly", 1500, 10*time.Second, 110*time.Millisecond)}},
		{benchCase: benchCase{name: "few-1", runs: 1}, web: websim.Config{Hosts: 1, Pages: 600},
			results: []result{run("run-out", 600, 6*time.Second, 9*time.Millisecond)}},
		{benchCase: benchCase{name: "few-6@5ms", runs: 1}, web: websim.Config{Hosts: 6, Pages: 300, Latency: 5 * time.Millisecond},
			results: []result{run("run-out", 1800, 6*time.Second, 800*time.Microsecond)}},
		{benchCase: benchCase{name: "docs", runs: 1}, web: websim.Config{Hosts: 2, Dirs: []string{"/a", "/b"}},
			results: []result{run("run-out", 800, time.Second, 2*time.Millisecond), run("colly", 800, 2*time.Second, 3*time.Millisecond)}},
	}
	h := &harness{wgetFor: time.Minute}
	md := h.report(cases, nil, nil, []string{"e2e-throughput.svg"}, 1)
	for _, want := range []string{
		"| Trawler all-in-one, `--out` | 500.0 | **0.50 ×** | 500 | 200 MiB | 100 / 150 / 200 MiB | 50.0 KB | 0.250 |",
		"n/a (Redis)", "n/a (memory)",
		"the limit is hosts / delay = 200 pages/s", "its largest host has 150 URLs", "| Colly v2 async | 150.0 | 75 % | 143 % | 110ms |",
		"| Trawler all-in-one, `--out` | 1 × 600 | 100.0 | 9ms | 9ms | 0s |",
		"| Trawler all-in-one, `--out` | 6 × 300, answers in ~5ms | 300.0 | 800µs |",
		"![e2e-throughput](img/e2e-throughput.svg)",
		"2 documentation trees served as 2 hosts, each home page a seed: /a, /b",
		"| Trawler all-in-one, `--out` | 800.0 | **2.00 ×** | 400 | 200 MiB | 2ms |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// With -modes "" (the extra cases alone) the report has no empty main tables.
func TestReportWithoutTheMainCase(t *testing.T) {
	cases := []caseResults{
		{benchCase: benchCase{name: "main", delay: 100 * time.Millisecond, runs: 1}, web: websim.Config{Hosts: 2, Pages: 2}},
		{benchCase: benchCase{name: "few-1", runs: 1}, web: websim.Config{Hosts: 1, Pages: 600},
			results: []result{{mode: "run-out", m: measured{wall: time.Second, cpu: time.Second}, audit: websim.Audit{Fetched: 600, MaxConcurrent: 1}}}},
	}
	md := (&harness{wgetFor: time.Minute}).report(cases, nil, nil, nil, 1)
	if strings.Contains(md, "| crawler | pages/s | vs Colly |") || strings.Contains(md, "Per run (pages/s)") {
		t.Errorf("empty main tables in:\n%s", md)
	}
	if !strings.Contains(md, "| Trawler all-in-one, `--out` | 1 × 600 | 600.0 |") {
		t.Errorf("few-hosts table missing:\n%s", md)
	}
}

// politeTruth is a truth of hosts hosts of about each URLs, the first with
// first of them, n URLs in all.
func politeTruth(hosts, each, first int) websim.Truth {
	t := websim.Truth{URLs: map[string]websim.Kind{}}
	for h := range hosts {
		n := each
		if h == 0 {
			n = first
		}
		for i := range n {
			t.URLs[fmt.Sprintf("http://h%d.example/p/%d", h, i)] = websim.KindPage
		}
	}
	return t
}
