package frontier

// Revisits of a continuous crawl (Options.Revisit): a finished fetch's URL
// goes into the partition's revisit schedule in the write that frees its
// host, due after an adaptive interval (pkg/revisit), and the loop moves
// what came due into the host queues, where it waits its turn like any
// URL. The schedule lives in the store only: memory does not grow with the
// URLs a continuous crawl keeps.

import (
	"context"
	"time"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/revisit"
	"github.com/trawlerhq/trawler/pkg/store"
)

// maxPromote bounds the revisits one step queues: a partition with many
// due at once (a restart after a long stop) takes them over several steps.
const maxPromote = 512

// promoteEvery is how often a partition looks for revisits that came due.
const promoteEvery = time.Second

// nextVisit is the schedule entry of a fetch that task in flight got, done
// reports fd: when it is due again and with the record it goes with. nil
// when the crawl does not revisit, or the fetcher did not visit the URL
// (robots.txt forbids it, or a fetcher without revisits took the task).
func (pt *partition) nextVisit(task messages.FetchTask, fd messages.FetchDone, now time.Time) *store.Scheduled {
	sched := pt.s.o.Revisit
	if sched == nil || fd.Revisit == nil || fd.Disallowed {
		return nil
	}
	rec := *fd.Revisit
	var last messages.Revisit
	if task.Revisit != nil {
		last = *task.Revisit
	}
	// The response's Last-Modified serves the conditional GET only, not
	// the interval: measured on the freshness web (docs/benchmarks.md),
	// taking the first interval from it and stretching later ones by the
	// time since the last change (Nutch's sync delta) cost 10 % of the
	// freshness and 2.6x the age against uniform revisiting, where the
	// rule without it ties. A sitemap's lastmod still seeds the first.
	var due time.Time
	if rec.Visits <= 1 || last.Interval <= 0 {
		rec.Interval = sched.Initial(revisit.Hint{ChangeFreq: last.ChangeFreq, LastModified: last.Lastmod}, now)
		due = now.Add(rec.Interval)
	} else {
		// A failed fetch tells nothing of change: it counts as unchanged,
		// so a page that keeps failing is asked for less often.
		changed := fd.Changed != nil && *fd.Changed
		rec.Interval, due = sched.Next(last.Interval, revisit.Visit{Fetched: now, Changed: changed})
	}
	return &store.Scheduled{Due: due, Queued: store.Queued{Host: task.Host, Attempt: 1, Link: messages.Link{
		URL: task.URL, Depth: task.Depth, Hops: task.Hops, Score: task.Score, Sitemap: task.Sitemap, Revisit: &rec,
	}}}
}

// lookForRevisits reads the revisits that came due into pt.promote, for
// the next step to queue. Only with no step pending: an entry read while
// a step that queues it is pending would be queued twice.
func (pt *partition) lookForRevisits(ctx context.Context, now time.Time) error {
	if pt.s.o.Revisit == nil || len(pt.promote) > 0 || now.Before(pt.promoteAt) {
		return nil
	}
	var due []store.Scheduled
	if err := bus.Retry(ctx, "read the revisit schedule", pt.log.Warn, func() {}, func() (err error) {
		due, err = pt.s.o.Store.Due(ctx, pt.p, now, maxPromote)
		return err
	}); err != nil {
		return err
	}
	pt.promote = due
	if len(due) < maxPromote {
		pt.promoteAt = now.Add(promoteEvery)
	}
	return nil
}

// promoted is the queue entries of the revisits a step queues.
func promoted(ss []store.Scheduled) []store.Queued {
	out := make([]store.Queued, len(ss))
	for i, s := range ss {
		out[i] = s.Queued
	}
	return out
}
