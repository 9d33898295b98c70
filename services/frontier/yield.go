package frontier

// Longest queue first, when the fetchers cannot keep up.
//
// With a politeness delay over more hosts than the fetchers and parsers keep
// up with, every host's task waits its turn in the same queues (the fetch
// stream, the cores, the done reports' way back): the hosts take turns, each
// at the same rate whatever it has left. They then end in the order of their
// size, and the largest run last, alone, at the delay's pace while the cores
// idle: a crawl's tail. When a partition sees that queueing (congestion: the
// time from a task's issue to its done report beyond the fetch itself), a host
// with less queued than the partition's longest rests longer, by up to
// yieldGain times the congestion and at most its own rest again: the wait
// moves from the shared queues to its own rest, and the hosts with the most to
// do turn faster. Politeness only gains. A host that does not rest (no delay,
// no --politeness-factor) is left alone: it ends as fast as the loop turns;
// so is every host while the partition's turn is as short as it has been
// (no congestion). See docs/frontier.md, "Longest queue first".

import (
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// yieldGain scales the congestion into the rest added to a host with nothing
// else queued: a host with half the longest queue rests yieldGain/2 times the
// congestion more, its wait moved from the shared queues to its own rest.
const yieldGain = 2

// congestionWindow is how many done reports make one window of the turn's
// mean; the partition's least window mean is the turn without congestion.
var congestionWindow = 64 // a variable for the tests

// congestion keeps a partition's turn: from a task's issue (or its
// not-before time, if later) to its done report's arrival, less the fetch's
// own duration. Its least window mean so far is the turn of a partition
// whose fetchers keep up (the crawl's first reports, a few hosts known);
// what the last window adds to it is the congestion.
type congestion struct {
	sum     time.Duration // of the window in progress
	n       int           // reports in it
	last    time.Duration // the last full window's mean
	base    time.Duration // the least full window's mean (0: none yet)
	longest int           // the most queued of the partition's hosts, as of the last gauge
}

// observe adds the done report fd of task t, arrived at came.
func (c *congestion) observe(t messages.FetchTask, fd messages.FetchDone, came time.Time) {
	if nothingSent(fd) || fd.Duration <= 0 {
		return // no request: no turn in the fetchers' queues either
	}
	from := t.IssuedAt
	if t.NotBefore.After(from) {
		from = t.NotBefore
	}
	if from.IsZero() {
		return
	}
	c.sum += max(came.Sub(from)-fd.Duration, 0)
	if c.n++; c.n < congestionWindow {
		return
	}
	c.last = c.sum / time.Duration(c.n)
	if c.base == 0 || c.last < c.base {
		c.base = max(c.last, time.Nanosecond)
	}
	c.sum, c.n = 0, 0
}

// congestedOver is the congestion beyond which a partition counts as
// congested (congested): its turn past 1 ms longer than its least. The
// politeness-bound benchmark's windows stay under it (median 0.1 ms, 90th
// percentile 0.6 ms); a crawl of 200 hosts at 100 ms that keeps both cores
// busy passes it (median 4.8 ms, 10th percentile 1.0 ms).
const congestedOver = time.Millisecond

// congested tells whether the partition's turn waits in shared queues (the
// fetchers and parsers do not keep up): the machine, not the delay, bounds
// the crawl.
func (c *congestion) congested() bool { return c.base > 0 && c.last-c.base > congestedOver }

// extra is the rest added to a host with queued URLs left whose rest is rest.
func (c *congestion) extra(queued int, rest time.Duration) time.Duration {
	over := c.last - c.base
	if rest <= 0 || over <= 0 || c.longest <= 0 || queued >= c.longest {
		return 0
	}
	short := 1 - float64(max(queued, 0))/float64(c.longest)
	return min(time.Duration(yieldGain*short*float64(over)), rest)
}
