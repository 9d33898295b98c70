package frontier

// Leases: a task whose lease runs out goes back to its host's queue, a task
// handed back unfetched is deferred, and a URL given up ends with a page
// record saying why.

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// leaseLive tells whether a lease entry's task is still the host's task in
// flight; an entry for any other has nothing left to expire.
func (pt *partition) leaseLive(hostName, taskID string) bool {
	h := pt.hosts[hostName]
	return h != nil && h.inFlight != nil && h.inFlight.Task.ID == taskID
}

// expire gives a task's URL back to its host's queue, or ends it when it was
// issued maxAttempts times, and frees the host. It returns the task when the
// URL was ended, nil otherwise (requeued, or the task is no longer live).
func (pt *partition) expire(ctx context.Context, hostName, taskID string, maxAttempts int) (*store.InFlight, error) {
	if !pt.leaseLive(hostName, taskID) {
		return nil, nil
	}
	h := pt.hosts[hostName]
	var requeued bool
	if err := bus.Retry(ctx, "expire task", pt.log.Warn, nil, func() (err error) {
		requeued, err = pt.s.o.Store.Expire(ctx, pt.p, hostName, taskID, maxAttempts)
		return err
	}); err != nil {
		return nil, err
	}
	task := h.inFlight
	h.dropReservation() // a requeued URL goes before it
	if requeued {
		h.queued++
		task = nil
	}
	pt.setTask(h, nil)
	pt.schedule(h, time.Now())
	return task, nil
}

func (pt *partition) expireLeases(ctx context.Context, now time.Time) error {
	for pt.leases.Len() > 0 && !pt.leases.peek().at.After(now) {
		e := pt.leases.pop()
		if pt.expected[e.task] != nil {
			// Its fetch ended (ended.go) and its report never came (its
			// task dead-lettered, say): memory has the host's next task
			// in flight, the store this one. Start again from the store,
			// where this task's lease runs out as any other's.
			return fmt.Errorf("the fetch of task %s (%s) ended, but its done report did not come before its lease ran out; reloading the partition from the store",
				e.task, e.host)
		}
		if !pt.leaseLive(e.host, e.task) {
			continue
		}
		pt.s.Stats.Expired.Add(1)
		if in := *pt.hosts[e.host].inFlight; in.Task.Attempt >= pt.s.o.MaxAttempts {
			// Its last attempt: the store will drop the URL (Expire). Its
			// record goes out first, so a crash between the two loses
			// nothing: the task is still in flight on restart, its lease
			// expires again and the same message (the same ID) is published
			// again, which JetStream drops as a duplicate.
			reason := fmt.Sprintf("its fetch result never came back (%d tasks issued, each lease of %s ran out: a fetcher crashed or stalled); given up (--max-attempts %d)",
				in.Task.Attempt, in.LeaseUntil.Sub(in.Task.IssuedAt).Round(time.Second), pt.s.o.MaxAttempts)
			if err := pt.endRecord(ctx, in, reason, kindLost); err != nil {
				return err
			}
		}
		ended, err := pt.expire(ctx, e.host, e.task, pt.s.o.MaxAttempts)
		if err != nil {
			return err
		}
		if ended != nil {
			pt.s.Stats.Dropped.Add(1)
			pt.log.Warn("giving up on URL: its fetch result never came back", "url", ended.Task.URL, "attempts", ended.Task.Attempt)
		}
	}
	return nil
}

// deferred puts back the URL of a task the fetcher handed back unfetched
// (fd.Retry: robots.txt unreachable, its server's per-IP slot busy, a
// shutdown; fd.Expired: too late for its deadline), after the rest fd asks
// for. Not a lost task, but not free either: a URL is issued at most
// MaxAttempts + MaxDeferrals times in all (Attempt counts every issue), then
// it ends as failed, with a page record saying why.
func (pt *partition) deferred(ctx context.Context, fd messages.FetchDone) error {
	if !pt.leaseLive(fd.Host, fd.TaskID) {
		return nil // stale: the task was re-issued after its lease ran out
	}
	h := pt.hosts[fd.Host]
	rest, _ := pt.s.rule().Rest(fd.CrawlDelay, fd.Duration, 0)
	h.nextAt = time.Now().Add(max(rest, fd.RetryAfter))
	pt.s.Stats.Deferred.Add(1)
	if fd.Expired {
		pt.s.Stats.Expired.Add(1)
	}
	maxAttempts := pt.s.o.MaxAttempts + pt.s.o.MaxDeferrals
	if in := *h.inFlight; in.Task.Attempt >= maxAttempts {
		// The store will drop the URL: its record goes out first (see
		// expireLeases).
		why := fd.Error
		switch {
		case fd.Expired:
			why = "the task expired before a fetcher got to it"
		case why == "":
			why = "not fetched"
		}
		reason := fmt.Sprintf("handed back unfetched %d times, the last: %s; given up (--max-deferrals %d)",
			in.Task.Attempt, why, pt.s.o.MaxDeferrals)
		pt.log.Warn("giving up on URL: handed back unfetched too often", "url", in.Task.URL, "attempts", in.Task.Attempt, "last", why)
		if err := pt.endRecord(ctx, in, reason, kindDeferred); err != nil {
			return err
		}
	}
	ended, err := pt.expire(ctx, fd.Host, fd.TaskID, maxAttempts)
	if err != nil || ended == nil {
		return err
	}
	pt.s.Stats.DeferredOut.Add(1)
	return nil
}

// The error kinds of URLs the frontier ends (the fetcher's KindDeferred and
// KindLost; services do not import each other): handed back unfetched more
// than MaxDeferrals times, and lost MaxAttempts times.
const (
	kindDeferred = "deferred"
	kindLost     = "lost"
	kindBlocked  = "blocked" // the address guard refused the host: nothing was sent
)

// endRecord publishes the page record of a URL the frontier ends without a
// fetch, so that taps, --out and archives see its final state and why. Its
// message ID is the fetcher's for the task's page: there was none (or, for a
// lost task, none came back). Callers publish it before the store drops the
// URL, so that a crash in between replays the same message, which JetStream
// drops as a duplicate within the duplicate window.
func (pt *partition) endRecord(ctx context.Context, in store.InFlight, reason, kind string) error {
	t := in.Task
	p := messages.Page{TaskID: t.ID, URL: t.URL, Host: t.Host, Partition: t.Partition,
		Depth: t.Depth, Hops: t.Hops, Error: reason, ErrorKind: kind, FetchedAt: time.Now().UTC()}
	meta, err := messages.EncodePage(&p)
	if err != nil {
		return err
	}
	m := nats.NewMsg(pt.s.o.Names.PagesFetched())
	m.Header.Set(messages.HeaderSchema, messages.Schema(messages.KindPage))
	m.Header.Set(messages.HeaderPage, string(meta))
	m.Header.Set("Trawler-URL", p.URL)
	m.Header.Set("Trawler-Status", "0")
	return bus.Retry(ctx, "publish page record", pt.log.Warn, nil, func() error {
		return bus.PublishAll(ctx, pt.s.o.JS, []*nats.Msg{m}, []string{"page:" + t.ID})
	})
}
