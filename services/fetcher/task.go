package fetcher

// One fetch task, from delivery to ack: decoding and claiming it, robots.txt,
// the fetch, and keeping its lease alive meanwhile.

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/politeness"
)

func (s *Service) handle(ctx context.Context, m jetstream.Msg) {
	var task messages.FetchTask
	err := messages.Decode(m.Data(), &task)
	if err == nil && task.URL == "" {
		err = fmt.Errorf("fetch task %q has no URL", task.ID)
	}
	if err == nil && s.dlq.CrashLooping(m) {
		err = fmt.Errorf("delivered more than %d times without being acked", s.o.MaxDeliver)
	}
	if err != nil {
		s.dlq.ParkOrLog(ctx, m, err.Error(), s.o.Log)
		return
	}
	ok, finished := s.claims.claim(task.ID)
	if !ok {
		if finished {
			_ = m.Ack() // done already; the first ack was lost or late
		}
		s.Stats.Redelivered.Add(1)
		return
	}
	acked := false
	defer func() { s.claims.finish(task.ID, acked) }()
	if out, ids, ok := s.unsent.take(task.ID); ok {
		// Fetched before, its publish failed: publish that result again.
		s.Stats.Republished.Add(1)
		rest, restIDs, handed := s.handOver(ctx, m, out, ids)
		if !handed {
			s.unsent.keep(task.ID, out, ids)
			return
		}
		if err := bus.PublishAll(ctx, s.o.JS, rest, restIDs); err != nil {
			s.unsent.keep(task.ID, rest, restIDs)
			s.o.Log.Warn("publishing fetch result failed again; task will be redelivered", "url", task.URL, "err", err)
			_ = m.NakWithDelay(5 * time.Second)
			return
		}
		_ = m.Ack()
		acked = true
		return
	}
	done := messages.FetchDone{TaskID: task.ID, Partition: task.Partition, Host: task.Host, URL: task.URL}
	var out []*nats.Msg
	var ids []string
	if !task.Deadline.IsZero() && time.Now().After(task.Deadline) {
		// Too late: the frontier may already have given the URL to someone
		// else. Say so, and let the frontier issue it again.
		done.Expired = true
		s.Stats.Expired.Add(1)
	} else {
		stop := make(chan struct{})
		go keepAlive(m, s.keepAliveEvery, stop)
		defer close(stop) // the task is held through a handover too
		page, body, err := s.visit(ctx, task, &done)
		if err != nil {
			s.o.Log.Warn("robots.txt bucket unavailable; task will be redelivered", "url", task.URL, "err", err)
			_ = m.NakWithDelay(5 * time.Second)
			return
		}
		if page != nil {
			out = append(out, pageMsg(s.o.Names, *page, body))
			ids = append(ids, "page:"+task.ID)
		}
	}
	// The response's end, not the report's: politeness counts from it.
	done.FinishedAt = time.Now().UTC()
	if s.o.Ended != nil {
		s.o.Ended(done) // the frontier in process may issue the host's next task now
		// The partition's loop, woken by Ended, waits in this P's run
		// queue while this goroutine goes on to parse and publish the
		// page (hundreds of µs with the other core busy): let it run
		// first. TestEndedRunsBeforeThePageIsHandedOn.
		runtime.Gosched()
	}
	data, _ := messages.Encode(&done)
	dm := nats.NewMsg(s.o.Names.FrontierDone(task.Partition))
	dm.Data = data
	dm.Header.Set(messages.HeaderKind, "done")
	out = append(out, dm)
	ids = append(ids, "done:"+task.ID)
	rest, restIDs, handed := s.handOver(ctx, m, out, ids)
	if !handed {
		s.unsent.keep(task.ID, out, ids)
		return
	}
	out, ids = rest, restIDs
	err = bus.PublishAll(ctx, s.o.JS, out, ids)
	if bus.TooLarge(err) && len(out) == 2 {
		// Permanent for this page (issue 19: such pages were refetched 10
		// times and dead-lettered, with no record): record it without its
		// body and the response's headers, and say why.
		s.o.Log.Warn("page message over the NATS limits; recorded without its body and headers", "url", task.URL, "err", err)
		var page messages.Page
		if p, derr := messages.DecodePage(out[0].Header.Get(messages.HeaderPage)); derr == nil {
			page = p
		} else {
			page = s.record(task, "")
		}
		page = bareRecord(page, fmt.Sprintf("page message over the NATS limits (%v): recorded without its body", err))
		page.Truncated = page.BodySize > 0
		out[0] = pageMsg(s.o.Names, page, nil)
		err = bus.PublishAll(ctx, s.o.JS, out, ids)
	}
	if bus.TooLarge(err) {
		// Not even a bare record fits (a server with a tiny max_payload):
		// the frontier still hears the task is done, with the reason.
		s.o.Log.Error("page record over the NATS limits; only the done report is published", "url", task.URL, "err", err)
		done.Error = errorText(fmt.Sprintf("page record over the NATS limits: %v", err))
		data, _ := messages.Encode(&done)
		out[len(out)-1].Data = data
		err = bus.PublishAll(ctx, s.o.JS, out[len(out)-1:], ids[len(ids)-1:])
	}
	if err != nil && !bus.TooLarge(err) {
		err = s.publishAgain(ctx, m, task.URL, out, ids, err)
	}
	if err != nil {
		// Let JetStream redeliver the task, and keep the result for it
		// (unsent.go): the redelivery publishes it, under the same
		// message IDs, instead of fetching again.
		s.unsent.keep(task.ID, out, ids)
		s.o.Log.Warn("publishing fetch result failed; task will be redelivered and its result published again", "url", task.URL, "err", err)
		_ = m.NakWithDelay(5 * time.Second)
		return
	}
	_ = m.Ack()
	acked = true
}

// visit checks robots.txt and fetches the task's URL, filling done. It returns
// the page to publish: a fetched one, or a record of why it was not fetched;
// nil when the task is to be issued again later.
func (s *Service) visit(ctx context.Context, task messages.FetchTask, done *messages.FetchDone) (*messages.Page, []byte, error) {
	if s.robots != nil {
		v, err := s.robots.check(ctx, task.URL)
		if err != nil {
			return nil, nil, err
		}
		if v.Fetched {
			s.Stats.RobotsFetched.Add(1)
			if s.o.Sitemaps {
				s.announceSitemaps(ctx, task, v.Sitemaps)
			}
		}
		done.CrawlDelay, done.Duration = v.CrawlDelay, v.Duration
		switch {
		case v.RetryAfter > 0:
			// RFC 9309: an unreachable robots.txt means "disallow all"
			// for now; come back later rather than drop the URL.
			done.Retry, done.RetryAfter = true, v.RetryAfter
			done.Error = errorText(v.Reason)
			s.Stats.RobotsDeferred.Add(1)
			return nil, nil, nil
		case !v.Allowed:
			done.Disallowed = true
			p := s.record(task, v.Reason)
			switch {
			case v.Blocked:
				// The address guard refused the host (its robots.txt
				// first): final at once, the record says why.
				p.ErrorKind = KindBlocked
				s.failed(task.Host, KindBlocked, v.Reason)
			case v.GaveUp:
				p.ErrorKind = KindRobots
				s.failed(task.Host, KindRobots, v.Reason)
			default:
				s.Stats.Disallowed.Add(1)
			}
			done.ErrorKind = p.ErrorKind
			return &p, nil, nil
		case v.Fetched:
			// robots.txt took this turn: the page waits the host's gap
			// here, so politeness holds without a round trip through the
			// frontier. On shutdown, hand the URL back instead.
			rule := politeness.Rule{Delay: s.o.Delay, Factor: s.o.Factor, MaxCrawlDelay: s.o.MaxCrawlDelay, MaxGap: s.o.MaxGap}
			gap, _ := rule.Rest(v.CrawlDelay, v.Duration, 0)
			select {
			case <-time.After(gap):
			case <-s.life.Done():
				done.Retry, done.Error = true, "fetcher shutting down"
				return nil, nil, nil
			}
		}
	}
	resp, wait, err := s.gatedFetch(ctx, task.URL, conditional(task), ipMaxWait)
	if resp == nil {
		// The server's address stayed at its per-IP limit, or the lease
		// table is unreachable (fetching anyway could break the limit):
		// hand the URL back for later.
		done.Error = fmt.Sprintf("server address at its per-IP limit (--ip-max-concurrent %d) for %s", s.o.IPCeiling, ipMaxWait)
		if err != nil && ctx.Err() == nil {
			s.o.Log.Warn("per-IP lease table unavailable; task put back", "url", task.URL, "err", err)
			wait = 5 * time.Second
			done.Error = errorText("per-IP lease table unavailable: " + err.Error())
		}
		done.Retry, done.RetryAfter = true, wait
		s.Stats.IPDeferred.Add(1)
		return nil, nil, nil
	}
	page := s.page(task, *resp)
	done.Status, done.Error, done.Duration, done.IP = page.Status, page.Error, page.Duration, page.IP
	done.ErrorKind, done.NoSuchHost = page.ErrorKind, noSuchHost(resp.Err)
	if task.Revisit != nil {
		rec, changed := revisited(*task.Revisit, *resp, page.FetchedAt)
		done.Revisit, done.Changed = &rec, changed
		page.Revisit, page.Changed = &rec, changed
		if task.Revisit.Visits > 0 {
			s.Stats.Revisits.Add(1)
		}
		if changed != nil && !*changed {
			s.Stats.Unchanged.Add(1)
			if resp.Status == 304 {
				s.Stats.NotModified.Add(1)
			}
		}
	}
	return &page, resp.Body, nil
}

// keepAlive tells JetStream the task is being worked on while a slow fetch
// runs, so it is not redelivered to another worker meanwhile.
func keepAlive(m jetstream.Msg, every time.Duration, stop <-chan struct{}) {
	if every <= 0 {
		every = 15 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = m.InProgress()
		}
	}
}
