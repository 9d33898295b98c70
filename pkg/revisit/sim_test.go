package revisit

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkFreshness simulates revisiting a set of pages that change as
// Poisson processes, at a fixed bandwidth (visits per second, the same for
// every policy: each slot visits the page due soonest), and reports the
// average freshness (Cho and Garcia-Molina: the share of time a page's copy
// is current) of uniform revisiting and of this package's rule, with and
// without the page's Last-Modified. It is the in-process half of the
// freshness measure issue 21 asks for: no web, no crawl, only the policy.
//
//	go test -run XX -bench Freshness ./pkg/revisit/
func BenchmarkFreshness(b *testing.B) {
	s, err := NewSchedule(time.Hour, 30*24*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	const pages = 1000
	bandwidth := float64(pages) / (24 * 3600) // uniform: every page once a day
	for b.Loop() {
		u := simulate(pages, bandwidth, policyUniform, s)
		n := simulate(pages, bandwidth, policyAdaptive, s)
		l := simulate(pages, bandwidth, policyAdaptiveLastModified, s)
		b.ReportMetric(u, "uniform-freshness")
		b.ReportMetric(n, "adaptive-freshness")
		b.ReportMetric(l, "adaptive-lastmod-freshness")
		b.ReportMetric(n/u, "adaptive/uniform")
	}
}

type policy int

const (
	policyUniform policy = iota
	policyAdaptive
	policyAdaptiveLastModified
)

type simPage struct {
	rate                   float64 // changes per second; 0: never
	nextChange, lastChange time.Time
	fresh                  bool
	freshSince             time.Time
	freshTotal             time.Duration
	interval               time.Duration
	due                    time.Time
	idx                    int
}

// simulate runs 30 days: half the pages never change, half change at rates
// spread log-uniformly from once an hour to once a week.
func simulate(n int, bandwidth float64, p policy, s Schedule) float64 {
	r := rand.New(rand.NewPCG(1, 1))
	start := time.Unix(0, 0)
	dur := 30 * 24 * time.Hour
	end := start.Add(dur)
	step := time.Duration(float64(time.Second) / bandwidth)
	next := func(pg *simPage, from time.Time) time.Time {
		if pg.rate == 0 {
			return end.Add(time.Hour)
		}
		return from.Add(time.Duration(r.ExpFloat64() / pg.rate * float64(time.Second)))
	}
	h := &dueHeap{}
	all := make([]*simPage, n)
	for i := range all {
		pg := &simPage{fresh: true, freshSince: start, lastChange: start}
		if i%2 == 1 {
			lo, hi := math.Log(1.0/(7*24*3600)), math.Log(1.0/3600)
			pg.rate = math.Exp(lo + r.Float64()*(hi-lo))
		}
		pg.nextChange = next(pg, start)
		pg.interval = s.Initial(Hint{}, start)
		pg.due = start.Add(time.Duration(i) * step)
		all[i] = pg
		heap.Push(h, pg)
	}
	catchUp := func(pg *simPage, t time.Time) {
		for !pg.nextChange.After(t) {
			if pg.fresh {
				pg.freshTotal += pg.nextChange.Sub(pg.freshSince)
				pg.fresh = false
			}
			pg.lastChange = pg.nextChange
			pg.nextChange = next(pg, pg.nextChange)
		}
	}
	for now := start; now.Before(end); now = now.Add(step) {
		pg := (*h)[0]
		catchUp(pg, now)
		changed := !pg.fresh
		if changed {
			pg.fresh, pg.freshSince = true, now
		}
		switch p {
		case policyUniform:
			pg.due = now.Add(time.Duration(n) * step)
		case policyAdaptive:
			pg.interval, pg.due = s.Next(pg.interval, Visit{Fetched: now, Changed: changed})
		case policyAdaptiveLastModified:
			pg.interval, pg.due = s.Next(pg.interval, Visit{Fetched: now, Changed: changed, Modified: pg.lastChange})
		}
		heap.Fix(h, 0)
	}
	var fresh time.Duration
	for _, pg := range all {
		catchUp(pg, end)
		if pg.fresh {
			pg.freshTotal += end.Sub(pg.freshSince)
		}
		fresh += pg.freshTotal
	}
	return float64(fresh) / float64(time.Duration(n)*dur)
}

type dueHeap []*simPage

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *dueHeap) Push(x any)        { pg := x.(*simPage); pg.idx = len(*h); *h = append(*h, pg) }
func (h *dueHeap) Pop() any {
	old := *h
	pg := old[len(old)-1]
	*h = old[:len(old)-1]
	return pg
}
