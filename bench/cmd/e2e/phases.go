package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/trawlerhq/trawler/bench/websim"
)

// phases splits a crawl's wall time by what the server saw: how long until
// the first request, when the median host and the last host were done, and
// (from the wall time) how long the crawler took to notice it was finished.
// A crawler that is slower with the same mean gap loses its time here.
type phases struct {
	first, medianHostDone, lastHostDone time.Duration
}

func phasesOf(log [][]websim.Request, start time.Time) phases {
	var p phases
	var done []time.Duration
	firstSet := false
	for _, reqs := range log {
		var last time.Time
		for _, r := range reqs {
			if d := r.Start.Sub(start); !firstSet || d < p.first {
				p.first, firstSet = d, true
			}
			if r.End.After(last) {
				last = r.End
			}
		}
		if !last.IsZero() {
			done = append(done, last.Sub(start))
		}
	}
	if len(done) == 0 {
		return p
	}
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	p.medianHostDone, p.lastHostDone = done[len(done)/2], done[len(done)-1]
	return p
}

func (p phases) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("first request %s, median host done %s, last host done %s", r(p.first), r(p.medianHostDone), r(p.lastHostDone))
}

// writeRequests writes a run's request log, one request a line: host, path,
// status, start and end in milliseconds since the run's start.
func writeRequests(file string, log [][]websim.Request, start time.Time) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "host\tpath\tstatus\tstart_ms\tend_ms")
	ms := func(t time.Time) float64 { return float64(t.Sub(start).Microseconds()) / 1000 }
	for _, reqs := range log {
		for _, r := range reqs {
			fmt.Fprintf(w, "%d\t%s\t%d\t%.3f\t%.3f\n", r.Host, r.Path, r.Status, ms(r.Start), ms(r.End))
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
