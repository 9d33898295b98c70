package websim

import (
	"net/url"
	"sort"
	"strings"
	"time"
)

// Truth is what a correct crawler of the web requests from the seeds: every
// reachable URL that robots.txt allows (pages, redirects and 404s), each
// once, and nothing else but robots.txt.
type Truth struct {
	URLs      map[string]Kind // absolute URL -> what it serves
	Pages     int             // of which 200 pages
	Redirects int
	NotFound  int
	// Disallowed are linked URLs robots.txt forbids: requesting one is a
	// violation.
	Disallowed int
	// Traps are linked trap entrances (trap mode); not in URLs.
	Traps int
	// EmptyQuery counts the URLs of URLs with an empty query ("/p/12?",
	// discovery mode): URLs of their own that serve what the URL without
	// the "?" serves.
	EmptyQuery int
	// OnFailing are the distinct linked URLs of failing hosts
	// (Config.Failing); not in URLs. FailingHosts are the failing hosts
	// linked at all.
	OnFailing, FailingHosts int
}

// Truth walks the link graph breadth-first from the seeds.
func (w *Web) Truth() Truth {
	t := Truth{URLs: map[string]Kind{}}
	disallowed := map[string]bool{}
	traps := map[string]bool{}
	onFailing := map[string]bool{}
	failingHosts := map[int]bool{}
	var queue []string
	for _, s := range w.Seeds() {
		if h, _, ok := w.split(s); ok && w.failing[h] != Healthy {
			onFailing[s] = true
			failingHosts[h] = true
			continue
		}
		t.URLs[s] = KindPage
		queue = append(queue, s)
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		h, path, ok := w.split(u)
		if !ok {
			continue
		}
		res := w.Resolve(h, path)
		t.URLs[u] = res.Kind
		if strings.HasSuffix(u, "?") {
			t.EmptyQuery++
		}
		var next []string
		switch res.Kind {
		case KindPage:
			t.Pages++
			for _, l := range w.Links(h, path) {
				next = append(next, l.URL)
			}
		case KindRedirect:
			t.Redirects++
			next = append(next, res.Target)
		case KindNotFound:
			t.NotFound++
		}
		for _, v := range next {
			if _, seen := t.URLs[v]; seen {
				continue
			}
			vh, vp, ok := w.split(v)
			switch {
			case !ok:
			case w.failing[vh] != Healthy:
				onFailing[v] = true
				failingHosts[vh] = true
			case Disallowed(vp):
				disallowed[v] = true
			case w.Resolve(vh, vp).Kind == KindTrap:
				traps[v] = true
			default:
				t.URLs[v] = KindPage // placeholder until visited
				queue = append(queue, v)
			}
		}
	}
	t.Disallowed, t.Traps = len(disallowed), len(traps)
	t.OnFailing, t.FailingHosts = len(onFailing), len(failingHosts)
	return t
}

// split parses an absolute URL of this web into host index and path.
func (w *Web) split(u string) (int, string, bool) {
	p, err := url.Parse(u)
	if err != nil {
		return 0, "", false
	}
	h := w.HostOf(p.Host)
	return h, p.RequestURI(), h >= 0
}

// Audit is what the server saw during one crawl, judged against the truth.
type Audit struct {
	Requests   int // every request, robots.txt included
	Robots     int // robots.txt requests
	Fetched    int // distinct URLs of the truth requested
	Missing    int // URLs of the truth never requested
	Duplicates int // requests of a URL already requested (robots.txt excluded)
	// Aliases are the duplicates requested under another spelling than the
	// first request (dot segments, escapes): the crawler's canonical form
	// did not see them as one URL.
	Aliases    int
	Violations int // requests of URLs robots.txt disallows
	TrapHits   int // requests of trap URLs
	// ToFailing are requests of pages of a hanging host (Config.Failing),
	// whose robots.txt never came: a crawler that took it for "allowed".
	ToFailing int
	Unknown   int // other requests outside the truth
	// MaxConcurrent is the most requests any one host served at once.
	MaxConcurrent int
	// MinGap is the smallest time between the end of one response and the
	// start of the next request to the same host, over all hosts and all
	// requests; MinGapPages leaves out robots.txt requests.
	MinGap, MinGapPages time.Duration
	// MeanGapPages is the average of those gaps: the delay plus whatever
	// the crawler's own loop adds before it asks a host again, which bounds
	// a polite crawl at hosts / (MeanGapPages + response time) pages/s.
	MeanGapPages time.Duration
	// MedianGapPages is their median: with no delay, the crawler's own
	// turnaround per host, from a response to its next request there.
	MedianGapPages time.Duration
	// GapsBelow counts gaps (pages only) shorter than the delay given to
	// Judge, counted from End: a short one may be the server's own
	// scheduling (see Request.Sent).
	GapsBelow int
	// Breaches counts gaps shorter than the delay even when counted from
	// Sent, before which the client cannot have had the response: certain
	// politeness violations, whatever the server's scheduling.
	Breaches int
	// First and Last bound the crawl's requests in time.
	First, Last time.Time
	// MissingSample is up to ten of the missing URLs, sorted: where to
	// look when a crawl is incomplete.
	MissingSample []string
}

// Completeness is the share of the truth requested.
func (a Audit) Completeness() float64 {
	if a.Fetched+a.Missing == 0 {
		return 0
	}
	return float64(a.Fetched) / float64(a.Fetched+a.Missing)
}

// Judge audits a request log (from Server.Log) against the truth; delay is
// the politeness gap the crawler was given.
func (w *Web) Judge(t Truth, log [][]Request, maxConcurrent func(h int) int, delay time.Duration) Audit {
	a := Audit{MinGap: -1, MinGapPages: -1}
	seen := map[string]string{} // URL -> the target as first requested
	var gapSum time.Duration
	var gapList []time.Duration
	for h, reqs := range log {
		if maxConcurrent != nil {
			a.MaxConcurrent = max(a.MaxConcurrent, maxConcurrent(h))
		}
		reqs = append([]Request(nil), reqs...)
		sort.Slice(reqs, func(i, j int) bool { return reqs[i].Start.Before(reqs[j].Start) })
		origin := w.Origin(h)
		var prevEnd, prevPageEnd, prevPageSent time.Time
		for _, r := range reqs {
			a.Requests++
			if a.First.IsZero() || r.Start.Before(a.First) {
				a.First = r.Start
			}
			if r.End.After(a.Last) {
				a.Last = r.End
			}
			if !prevEnd.IsZero() {
				a.MinGap = minGap(a.MinGap, r.Start.Sub(prevEnd))
			}
			prevEnd = r.End
			if r.Path == "/robots.txt" {
				a.Robots++
				continue
			}
			if !prevPageEnd.IsZero() {
				g := r.Start.Sub(prevPageEnd)
				a.MinGapPages = minGap(a.MinGapPages, g)
				gapSum += g
				gapList = append(gapList, g)
				if g < delay {
					a.GapsBelow++
				}
				if r.Start.Sub(prevPageSent) < delay {
					a.Breaches++
				}
			}
			prevPageEnd, prevPageSent = r.End, r.Sent
			u := origin + r.Path
			if first, ok := seen[u]; ok {
				a.Duplicates++
				if r.Raw != "" && first != "" && r.Raw != first {
					a.Aliases++
				}
				continue
			}
			seen[u] = r.Raw
			switch _, ok := t.URLs[u]; {
			case ok:
				a.Fetched++
			case w.failing[h] != Healthy:
				a.ToFailing++
			case Disallowed(r.Path):
				a.Violations++
			case w.Resolve(h, r.Path).Kind == KindTrap:
				a.TrapHits++
			default:
				a.Unknown++
			}
		}
	}
	a.Missing = len(t.URLs) - a.Fetched
	if a.Missing > 0 {
		for u := range t.URLs {
			if _, ok := seen[u]; !ok {
				a.MissingSample = append(a.MissingSample, u)
			}
		}
		sort.Strings(a.MissingSample)
		a.MissingSample = a.MissingSample[:min(10, len(a.MissingSample))]
	}
	if n := len(gapList); n > 0 {
		a.MeanGapPages = gapSum / time.Duration(n)
		sort.Slice(gapList, func(i, j int) bool { return gapList[i] < gapList[j] })
		a.MedianGapPages = gapList[n/2]
		if n%2 == 0 {
			a.MedianGapPages = (gapList[n/2-1] + gapList[n/2]) / 2
		}
	}
	return a
}

func minGap(cur, g time.Duration) time.Duration {
	if cur < 0 || g < cur {
		return g
	}
	return cur
}

// Throughput buckets the requests of log (robots.txt excluded) per interval
// since start: the crawl's pages per second over time.
func Throughput(log [][]Request, start time.Time, every time.Duration) []float64 {
	var out []float64
	for _, reqs := range log {
		for _, r := range reqs {
			if r.Path == "/robots.txt" || r.Start.Before(start) {
				continue
			}
			i := int(r.Start.Sub(start) / every)
			for len(out) <= i {
				out = append(out, 0)
			}
			out[i]++
		}
	}
	for i := range out {
		out[i] /= every.Seconds()
	}
	return out
}
