package frontier

// Politeness: how long a host rests after a done report (pkg/politeness's
// rule, capped), and which reports sent nothing to the host.

import (
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/politeness"
)

// rule is the crawl's politeness rule (pkg/politeness).
func (s *Service) rule() politeness.Rule {
	return politeness.Rule{Delay: s.o.Delay, Factor: s.o.Factor, MaxCrawlDelay: s.o.MaxCrawlDelay, MaxGap: s.o.MaxGap}
}

// nothingSent tells whether fd's fetch sent nothing to the host: robots.txt
// (known already) forbade the URL, or the host was given up or refused, or
// its name does not exist.
func nothingSent(fd messages.FetchDone) bool {
	return fd.Disallowed && fd.Duration == 0 || fd.NoSuchHost || fd.ErrorKind == kindBlocked
}

// failed tells whether a fetch counts towards a host's failure backoff: no
// answer, or a server error.
func failed(fd messages.FetchDone) bool { return fd.Status == 0 && fd.Error != "" || fd.Status >= 500 }

// restUntil is when a host may be fetched again after fd: the politeness
// rule's rest, failure backoff included, capped by the max gap.
func (pt *partition) restUntil(fd messages.FetchDone, now time.Time) time.Time {
	if h := pt.hosts[fd.Host]; h != nil && h.inFlight != nil && h.inFlight.Task.ID == fd.TaskID {
		pt.congestion.observe(h.inFlight.Task, fd, now)
	}
	at, capped, yielded := pt.rest(fd, now)
	if capped {
		pt.s.Stats.CrawlDelayCapped.Add(1)
	}
	if yielded > 0 {
		pt.s.Stats.Yielded.Add(1)
	}
	return at
}

// rest is restUntil without counting a capped Crawl-delay or a lengthened
// rest; yielded is what longest queue first added (yield.go).
func (pt *partition) rest(fd messages.FetchDone, now time.Time) (at time.Time, capped bool, yielded time.Duration) {
	h := pt.hosts[fd.Host]
	if nothingSent(fd) {
		// Nothing was sent to the host (robots.txt, known already,
		// forbids the URL, or the host was given up or refused; its name
		// does not exist): the rest since its last request is still
		// running, or over, and its next URL may go at once. A given-up
		// or unresolvable host's queue then ends at the pace of the loop,
		// not one URL per --politeness-delay or failure backoff (up to the
		// max gap per URL with --ignore-robots).
		if h != nil && h.nextAt.After(now) {
			return h.nextAt, false, 0
		}
		return now, false, 0
	}
	failures := 0
	if h != nil {
		failures = h.failures
	}
	if failed(fd) {
		failures++
	} else {
		failures = 0
	}
	// The gap counts from the report's arrival, not from the fetcher's
	// finished_at: the benchmark's server-side audit, on a loaded machine,
	// saw a server return from its handler up to ~40 ms after the client had
	// its last byte, so a gap counted from finished_at ended early by the
	// server's clock. The report's trip back is the safety margin; issuing
	// ahead still hides the trip out to the fetcher.
	rest, capped := pt.s.rule().Rest(fd.CrawlDelay, fd.Duration, failures)
	if h != nil {
		yielded = pt.congestion.extra(h.queued, rest) // longest queue first
	}
	return now.Add(rest + yielded), capped, yielded
}
