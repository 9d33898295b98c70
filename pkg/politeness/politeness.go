// Package politeness is the one rule for how long a host rests between two
// requests, used by the frontier (after every fetch) and by the fetcher
// (after a robots.txt fetch that took a page's turn).
//
// The rest is max(Delay, min(max(Crawl-delay, k x response time) + backoff,
// MaxGap)): the configured delay always holds; what the host's own behaviour
// adds (its robots.txt Crawl-delay, k times its last response time, the
// backoff of a host that keeps failing) is capped by MaxGap, as Heritrix caps
// the same rule (max-delay-ms), so one slow or failing host never rests for
// minutes and the crawl keeps ending by itself.
package politeness

import "time"

// DefaultMaxGap is MaxGap's default: Heritrix's max-delay-ms, and the
// Crawl-delay cap of Nutch and StormCrawler.
const DefaultMaxGap = 30 * time.Second

// Rule holds a crawl's politeness settings.
type Rule struct {
	// Delay is the least rest after every request (--politeness-delay). It
	// is the user's own setting, so it holds even above MaxGap.
	Delay time.Duration
	// Factor is k: a host also rests k times its last response time
	// (--politeness-factor; Mercator used 10).
	Factor float64
	// MaxCrawlDelay caps a robots.txt Crawl-delay (--max-crawl-delay).
	MaxCrawlDelay time.Duration
	// MaxGap caps the rest a host's behaviour can add (--politeness-max-gap;
	// 0: DefaultMaxGap).
	MaxGap time.Duration
}

// Rest is how long a host rests after a request whose response took took,
// given its robots.txt Crawl-delay and its failures in a row (this one
// included). capped reports a Crawl-delay above what the rule allows, for
// counting.
func (r Rule) Rest(crawlDelay, took time.Duration, failures int) (rest time.Duration, capped bool) {
	maxGap := r.MaxGap
	if maxGap <= 0 {
		maxGap = DefaultMaxGap
	}
	cd := crawlDelay
	if r.MaxCrawlDelay > 0 && cd > r.MaxCrawlDelay {
		cd, capped = r.MaxCrawlDelay, true
	}
	if cd > maxGap {
		capped = true
	}
	own := max(cd, time.Duration(r.Factor*float64(took))) + Backoff(failures)
	return max(r.Delay, min(own, maxGap)), capped
}

// Backoff is the extra rest of a host that keeps failing (no answer, or a
// server error): nothing after one failure, then 1 s after the second in a
// row, doubling with each (2 s, 4 s, 8 s ...); Rest caps the sum at MaxGap.
func Backoff(failures int) time.Duration {
	if failures < 2 {
		return 0
	}
	return time.Second << min(failures-2, 20)
}
