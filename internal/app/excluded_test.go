package app

import "testing"

func TestExcludedLinks(t *testing.T) {
	key := func(r string) string { return `trawler_parser_links_excluded_total{reason="` + r + `"}` }
	for _, tt := range []struct {
		counters map[string]float64
		want     string
	}{
		{nil, ""},
		{map[string]float64{key("url_length"): 0, key("pattern"): 0, "trawler_parser_links_filtered_total": 0}, ""},
		{map[string]float64{key("url_length"): 120, key("path_depth"): 40}, "160 links: 120 url length, 40 path depth"},
		{map[string]float64{key("pattern"): 3, key("query_params"): 2, key("repeated_segment"): 1, key("path_depth"): 0},
			"6 links: 1 repeated segment, 2 query params, 3 pattern"},
	} {
		if got := ExcludedLinks(tt.counters); got != tt.want {
			t.Errorf("ExcludedLinks(%v) = %q, want %q", tt.counters, got, tt.want)
		}
	}
}
