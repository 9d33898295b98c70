package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Two runs of three benchmarks as go test prints them, with a log line
// written into the middle of one result (the second Dispatch run).
const sample = `goos: linux
goarch: amd64
pkg: github.com/trawlerhq/trawler/services/frontier
cpu: AMD EPYC
BenchmarkDispatch/redis/hosts=2000-2         	   10000	      9000 tasks/s	   22627 B/op	     257 allocs/op
BenchmarkDispatch/redis/hosts=2000-2         	redis: 2026/11/24 22:49:57 pool.go:1458: Unexpected conn[39] state
   10369	      9448 tasks/s	   21903 B/op	     238 allocs/op
PASS
ok  	github.com/trawlerhq/trawler/services/frontier	47.313s
pkg: github.com/trawlerhq/trawler/services/parser
BenchmarkExtract/contexts-2            	      64	 135.74 MB/s	       131.8 MB/cpu-s	      2000 pages/cpu-s	 5901793 B/op	   47691 allocs/op
BenchmarkExtract/contexts-2            	      64	 140.00 MB/s	       131.8 MB/cpu-s	      2400 pages/cpu-s	 5901793 B/op	   47691 allocs/op
BenchmarkExtract/contexts-2            	      64	 100.00 MB/s	       131.8 MB/cpu-s	      2200 pages/cpu-s	 5901793 B/op	   47691 allocs/op
BenchmarkDOMParseBaseline-2   	      22	  48.80 MB/s	        49.16 MB/cpu-s	       800 pages/cpu-s	 7592128 B/op	  151452 allocs/op
BenchmarkDOMParseBaseline-2   	      22	  48.80 MB/s	        49.16 MB/cpu-s	      1100 pages/cpu-s	 7592128 B/op	  151452 allocs/op
BenchmarkDOMParseBaseline-2   	      22	  48.80 MB/s	        49.16 MB/cpu-s	      1000 pages/cpu-s	 7592128 B/op	  151452 allocs/op
ok  	github.com/trawlerhq/trawler/services/parser	9.236s
pkg: github.com/trawlerhq/trawler/pkg/urlx
BenchmarkCanonicalizeMix-2   	 2717258	       430.4 ns/op	       440.4 cpu-ns/URL	       430.4 ns/URL	      39 B/op	       0 allocs/op
BenchmarkCanonicalize-2      	 2989322	       613.4 ns/op	      48 B/op	       1 allocs/op
ok  	github.com/trawlerhq/trawler/pkg/urlx	4.1s
`

func TestParseKeepsUnitsAndPackages(t *testing.T) {
	r := parse(strings.NewReader(sample))
	s, ok := r.get("Extract/contexts", "MB/s")
	if !ok {
		t.Fatalf("no Extract MB/s; series: %v", r.order)
	}
	if s.Pkg != "services/parser" || len(s.Values) != 3 || s.median() != 135.74 || s.min() != 100 || s.max() != 140 {
		t.Fatalf("Extract MB/s = %+v (median %v)", *s, s.median())
	}
	d, ok := r.get("Dispatch/redis/hosts=2000", "tasks/s")
	if !ok || d.Pkg != "services/frontier" || len(d.Values) != 1 || d.Values[0] != 9000 {
		t.Fatalf("Dispatch tasks/s = %+v", d)
	}
	if len(r.Broken) == 0 {
		t.Fatal("the result broken by a log line was not reported")
	}
	if _, ok := r.get("Extract/contexts", "B/s"); ok {
		t.Fatal("MB/s was tidied into B/s")
	}
}

func TestMedianOfEvenCount(t *testing.T) {
	if m := (series{Values: []float64{4, 1, 3, 2}}).median(); m != 2.5 {
		t.Fatalf("median = %v", m)
	}
}

func TestRenderHeadlinesRatiosAndMissing(t *testing.T) {
	r := parse(strings.NewReader(sample))
	out := render(r, header{when: time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC), machine: "2 CPUs", command: "go run ./cmd/components", goTest: "go test", count: 3, load: [2]string{"1.0", "2.0"}})
	for _, want := range []string{
		"Measured 2026-11-24 23:00 UTC on 2 CPUs",
		// Extract over DOM parse pages/cpu-s: medians 2200/1000; extremes 2000/1100 and 2400/800.
		"| parser | … pages per CPU-second vs x/net/html's DOM parse alone | 2.2 × | 1.82 – 3 | ≥ 2 × ✔ |",
		"| frontier | fetch tasks issued/s, one replica, Redis, 2,000 due hosts | 9,000 tasks/s | 9,000 – 9,000 | ≥ 10,000 ✘ not met |",
		"| parser | link extraction, MB/s of HTML | 136 MB/s | 100 – 140 |",
		// A cost: at most the goal.
		"| urls | … ns per URL, the discovery web's href spellings | 430 ns | 430 – 430 | ≤ 500 ✔ |",
		"| urls | canonicalization, ns per URL (one URL that needs every rule) | 613 ns | 613 – 613 | ≤ 500 ✘ not met |",
		"| dedup | URL checks/s through the service (JetStream in and out, cache, Bloom filter, Redis seen set) | not run |",
		"| services/frontier | Dispatch/redis/hosts=2000 | tasks/s | 9,000 | 9,000 – 9,000 | 1 |",
		"did not parse",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{283799.4: "283,799", 1000: "1,000", 999.6: "1,000", 9.845: "9.85", 0.39: "0.39", -12345: "-12,345"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestHeadlinesNameBenchmarksThatExist guards the headline table against a
// renamed benchmark: each names a Benchmark function of the product's tests
// (sub-benchmarks are checked when the table is rendered: "not run").
func TestHeadlinesNameBenchmarksThatExist(t *testing.T) {
	funcs := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func Benchmark(\w+)\(b \*testing\.B\)`)
	err := filepath.WalkDir("../../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bench" || d.Name() == "charts" || strings.HasPrefix(d.Name(), ".")) && path != "../../.." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				funcs[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, hl := range headlines {
		for _, m := range []measure{hl.Of, hl.Over} {
			if m.Bench == "" {
				continue
			}
			if base, _, _ := strings.Cut(m.Bench, "/"); !funcs[base] {
				t.Errorf("headline %q: no func Benchmark%s in the product's tests", hl.What, base)
			}
		}
	}
}

func TestShellJoinQuotesWhatAShellWouldSplit(t *testing.T) {
	got := shellJoin([]string{"-bench", "Extract$|DOM", "-pkgs", "./a ./b", "-count", "3", "it's", ""})
	want := `-bench 'Extract$|DOM' -pkgs './a ./b' -count 3 'it'\''s' ''`
	if got != want {
		t.Fatalf("shellJoin = %s, want %s", got, want)
	}
}
