package politeness

import (
	"testing"
	"time"
)

func TestRest(t *testing.T) {
	const s = time.Second
	r := Rule{Delay: s, Factor: 10, MaxCrawlDelay: 30 * s, MaxGap: 30 * s}
	for _, c := range []struct {
		name             string
		rule             Rule
		crawlDelay, took time.Duration
		failures         int
		want             time.Duration
		wantCapped       bool
	}{
		{"the delay when nothing else asks more", r, 0, 10 * time.Millisecond, 0, s, false},
		{"k x response time", r, 0, 500 * time.Millisecond, 0, 5 * s, false},
		{"Crawl-delay", r, 7 * s, 0, 0, 7 * s, false},
		{"a 30 s response rests 30 s, not 5 minutes", r, 0, 30 * s, 0, 30 * s, false},
		{"Crawl-delay above the cap is capped and counted", r, 3600 * s, 0, 0, 30 * s, true},
		{"Crawl-delay above a lower max gap is counted", Rule{Factor: 10, MaxCrawlDelay: 30 * s, MaxGap: 10 * s}, 20 * s, 0, 0, 10 * s, true},
		{"one failure: no backoff", r, 0, 0, 1, s, false},
		{"backoff after the second failure", r, 0, 0, 2, s, false},
		{"backoff doubles", r, 0, 0, 4, 4 * s, false},
		{"backoff stacks on the gap within the cap", r, 0, 2 * s, 5, 28 * s, false},
		{"backoff is capped", r, 0, 0, 60, 30 * s, false},
		{"the user's delay holds above the cap", Rule{Delay: 45 * s, Factor: 10, MaxGap: 30 * s}, 0, 10 * s, 9, 45 * s, false},
		{"zero MaxGap is the default", Rule{Factor: 10}, 0, time.Hour, 0, DefaultMaxGap, false},
		{"k = 0", Rule{Delay: 100 * time.Millisecond}, 0, 5 * s, 0, 100 * time.Millisecond, false},
	} {
		got, capped := c.rule.Rest(c.crawlDelay, c.took, c.failures)
		if got != c.want || capped != c.wantCapped {
			t.Errorf("%s: Rest = %v, capped %v; want %v, %v", c.name, got, capped, c.want, c.wantCapped)
		}
	}
}
