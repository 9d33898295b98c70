package app

import (
	"fmt"
	"strings"

	"github.com/trawlerhq/trawler/pkg/traps"
)

// ExcludedLinks is the summary row of links the parsers did not follow for
// a limit, by reason, from a run's counters (heartbeat.Flatten):
// "160 links: 120 url length, 40 path depth". Reasons with no link are
// left out; "" when there is none.
func ExcludedLinks(counters map[string]float64) string {
	var total float64
	var parts []string
	for _, r := range traps.Excluded() {
		n := counters[`trawler_parser_links_excluded_total{reason="`+r.String()+`"}`]
		if n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%.0f %s", n, r.Words()))
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f links: %s", total, strings.Join(parts, ", "))
}
