package frontier

import (
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// When a step's commit is urgent. The embedded store paces its commits
// (store.Early: one per PaceInterval under load) and a partition's loop does
// not wait for them, so a commit is worth hurrying only when a host waits
// for it: see docs/frontier.md, "Commits by the interval".

// restsBriefly tells whether host name rests too briefly between fetches for
// the group commit's pacing (see host.rest; a host not yet fetched counts the
// configured delay).
func (pt *partition) restsBriefly(name string) bool {
	e, ok := pt.s.o.Store.(store.Early)
	if !ok {
		return false
	}
	rest := pt.s.o.Delay
	if h := pt.hosts[name]; h != nil && h.rest > 0 {
		rest = h.rest
	}
	// Twice the interval: a done report held for a paced step is applied
	// up to an interval (and an fsync) after it came, and the host's next
	// task must be at hand before its rest ends.
	return rest < 2*e.PaceInterval()
}

// waitsForLinks tells whether host name, idle (nothing queued, nothing in
// flight) and due within twice the group commit's interval, waits for links
// that come while a step is pending: its next task comes from the step
// after that one.
func (pt *partition) waitsForLinks(name string, now time.Time) bool {
	e, ok := pt.s.o.Store.(store.Early)
	if !ok {
		return false
	}
	h := pt.hosts[name]
	return h == nil || h.queued <= 0 && h.inFlight == nil && h.nextAt.Before(now.Add(2*e.PaceInterval()))
}

// hurryForLinks hurries the writes pending now for links to an idle host
// (waitsForLinks), unless the partition is congested. The step that then takes the links issues the host's task at once
// (urgent, as any step issuing a task not yet out); the pending one, which
// issues nothing (a done report that left its host with no queue, say),
// waited for company. The seed's host waited 20-25 ms that way for the
// seed's links, at the start of every crawl. In a crawl that keeps the cores
// busy, new hosts are found all the time and their first task waits in the
// shared queues anyway: a commit for each would cost CPU for nothing.
func (pt *partition) hurryForLinks() {
	if e, ok := pt.s.o.Store.(store.Early); ok && !pt.congestion.congested() {
		e.Hurry()
	}
}

// waitsForStep notes a done report taken while a step was pending that
// waits for a step (held or carried): its host's rest counts from now, when
// it came, and the step is hurried if the host would be due soon (hurryFor).
func (pt *partition) waitsForStep(seq uint64, fd messages.FetchDone, now time.Time) {
	if pt.arrived == nil {
		pt.arrived = map[uint64]time.Time{}
	}
	if came, ok := pt.arrived[seq]; ok {
		now = came // held, then released (recordedEarly): it came then
	}
	pt.arrived[seq] = now
	pt.hurryFor(fd, now)
}

// hurryFor hurries the writes fd's host waits for when fd makes the host
// due within twice the group commit's interval: the writes pending in the
// store now, and the next step if it is the one that records the host's
// task in flight (its reservation waits in pre).
//
// A URL that cost no request (robots.txt forbade it) of a host that rests
// longer is the exception, hurried only while the partition is not
// congested. Unhurried, such a URL held its host 30-60 ms after a 100 ms
// rest (its record waited for the pending step, then for company): 2 % of a
// politeness-bound crawl, whose cores idle and whose commits are cheap. In a
// crawl that keeps the cores busy, the host's next turn waits in the shared
// queues anyway, and a commit for each such URL (4 % of the URLs) more than
// doubled the commits a page and cost CPU the other hosts wait for.
func (pt *partition) hurryFor(fd messages.FetchDone, now time.Time) {
	e, ok := pt.s.o.Store.(store.Early)
	if !ok {
		return
	}
	at, _, _ := pt.rest(fd, now)
	if !at.Before(now.Add(2*e.PaceInterval() + pt.s.o.IssueAhead)) { // as restsBriefly
		return
	}
	if nothingSent(fd) && !pt.restsBriefly(fd.Host) && pt.congestion.congested() {
		return
	}
	e.Hurry()
	for _, d := range pt.pre {
		if d.issue.Host == fd.Host {
			pt.hurryNext = true
			break
		}
	}
}
