package frontier

// Gauges: the partition's share of the replica's queue figures.

import (
	"sync/atomic"
	"time"
)

// forget takes a stopped partition's figures out of the replica's gauges.
func (pt *partition) forget() {
	g := &pt.s.Gauges
	for i, v := range []*atomic.Int64{&g.Queued, &g.Ready, &g.Waiting, &g.InFlight} {
		v.Add(-pt.gauged[i])
	}
	pt.gauged = [4]int64{}
}

// gauge refreshes the replica's gauges with this partition's figures, at
// most once a second (a pass over the partition's live hosts).
func (pt *partition) gauge(now time.Time) {
	if now.Sub(pt.gaugedAt) < time.Second {
		return
	}
	pt.gaugedAt = now
	var cur [4]int64
	longest := 0
	for name, h := range pt.hosts {
		if h.queued <= 0 && h.inFlight == nil && !h.scheduled && !h.nextAt.After(now) {
			delete(pt.hosts, name) // idle and rested: forget it
			continue
		}
		cur[0] += int64(h.queued)
		longest = max(longest, h.queued)
		switch {
		case h.inFlight != nil: // counted by setTask, exactly
		case h.queued > 0 && h.nextAt.After(now):
			cur[2]++
		case h.queued > 0:
			cur[1]++
		}
	}
	g := &pt.s.Gauges
	cur[3] = pt.gauged[3]
	for i, v := range []*atomic.Int64{&g.Queued, &g.Ready, &g.Waiting} {
		v.Add(cur[i] - pt.gauged[i])
	}
	pt.gauged = cur
	pt.congestion.longest = longest
	// A lease entry outlives its task by the lease's length (minutes);
	// once stale entries outnumber the live ones, drop them, so memory
	// follows the tasks in flight rather than the crawl's rate.
	if pt.leases.Len() > 2*int(cur[3])+1024 {
		pt.leases.keep(func(e timeEntry) bool { return pt.leaseLive(e.host, e.task) })
	}
}
