package charttest

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The Go runtime and process collectors internal/app.ServeMetrics registers.
var runtimeMetrics = map[string]bool{
	"process_resident_memory_bytes": true, "process_cpu_seconds_total": true, "go_goroutines": true,
}

var (
	// prometheus.NewDesc("trawler_x_y", ...)
	descName = regexp.MustCompile(`NewDesc\(\s*"(trawler_[a-z0-9_]+)"`)
	// Namespace: "trawler", Subsystem: "x", Name: "y"
	optsName = regexp.MustCompile(`Namespace:\s*"(trawler)",\s*Subsystem:\s*"([a-z0-9_]+)",\s*Name:\s*"([a-z0-9_]+)"`)
	// bus.RegisterCounters(reg, "x", bus.Counter{Name: "y", ...}, ...)
	registerCounters = regexp.MustCompile(`RegisterCounters\([^,]+,\s*"([a-z0-9_]+)",`)
	counterName      = regexp.MustCompile(`bus\.Counter\{Name:\s*"([a-z0-9_]+)"`)
	// Series names in a PromQL expression.
	seriesName = regexp.MustCompile(`\b((?:trawler|process|go)_[a-z0-9_]+)\b`)
)

// exportedMetrics reads the metric names the product's Go code registers.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, dir := range []string{"../../services", "../../pkg", "../../internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s := string(src)
			for _, m := range descName.FindAllStringSubmatch(s, -1) {
				names[m[1]] = true
			}
			for _, m := range optsName.FindAllStringSubmatch(s, -1) {
				names[m[1]+"_"+m[2]+"_"+m[3]] = true
			}
			// Counters belong to the RegisterCounters call before them.
			calls := registerCounters.FindAllStringSubmatchIndex(s, -1)
			for i, c := range calls {
				end := len(s)
				if i+1 < len(calls) {
					end = calls[i+1][0]
				}
				sub := s[c[2]:c[3]]
				for _, m := range counterName.FindAllStringSubmatch(s[c[1]:end], -1) {
					names["trawler_"+sub+"_"+m[1]] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Sanity: the scan must find the series the operations guide lists.
	for _, n := range []string{"trawler_fetcher_pages_total", "trawler_dedup_urls_in_total", "trawler_frontier_tasks_issued_total", "trawler_parser_pages_total", "trawler_dns_lookups_total"} {
		if !names[n] {
			t.Fatalf("the source scan missed %s; found %v", n, names)
		}
	}
	return names
}

// Every series the Grafana dashboard queries is one the services export.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "trawler.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("dashboard needs a uid and a title")
	}
	exported := exportedMetrics(t)
	ids := map[int]bool{}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") || strings.Count(tg.Expr, "{") != strings.Count(tg.Expr, "}") {
				t.Errorf("panel %q: unbalanced expression %s", p.Title, tg.Expr)
			}
			for _, m := range seriesName.FindAllString(tg.Expr, -1) {
				base := m
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suf); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] && !runtimeMetrics[base] {
					t.Errorf("panel %q queries %s, which no service exports", p.Title, m)
				}
				used[base] = true
			}
		}
	}
	// Report (not require) exported series the dashboard leaves out.
	var unused []string
	for n := range exported {
		if !used[n] {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	t.Logf("%d series charted; not charted: %v", len(used), unused)
}
