package frontier

// A fetch's end, heard in process: in `trawler run` the fetcher tells the
// frontier the moment a response has been read (Service.Ended), before the
// page is parsed and written out, and a host due again at once gets its
// reserved next task then, not once the done report has made its way
// through the parse, the --out line and the stream. The done report still
// makes the fetch durable: the step that records the next task also applies
// the report, and waits for it (partition.expected). See docs/frontier.md,
// "A fetch's end, heard in process".
//
// A fetcher in another process says the same on core NATS (Names.Ended: no
// stream, nothing stored, lost if nobody listens), and each partition
// listens while it runs: the done report's way through the stream (stored,
// then delivered to the partition's pull) is a millisecond or more on a
// busy machine, most of a host's turnaround in the services.

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// endsBuffer bounds the fetch ends waiting for a partition's loop; a full
// buffer drops the signal, and the done report frees the host as before.
const endsBuffer = 256

// Ended tells the partition of fd's task that the fetch has ended (its
// response read or the attempt given up), ahead of its done report. It never
// blocks, and does nothing for a partition this replica does not run. fd is
// the done report the fetcher will publish once the page's results are.
func (s *Service) Ended(fd messages.FetchDone) {
	if fd.Retry || fd.Expired {
		return // issued again after a rest: the done report's business
	}
	if v, ok := s.ends.Load(fd.Partition); ok {
		select {
		case v.(chan messages.FetchDone) <- fd:
		default:
		}
	}
}

// listenEnds registers the partition for Ended until the returned function
// runs (early stores only: without them no task leaves before its write).
func (pt *partition) listenEnds() func() {
	if !pt.s.early {
		return func() {}
	}
	pt.ends = make(chan messages.FetchDone, endsBuffer)
	pt.s.ends.Store(pt.p, pt.ends)
	unsub := pt.hearEnds()
	return func() {
		unsub()
		pt.s.ends.CompareAndDelete(pt.p, pt.ends)
	}
}

// hearEnds subscribes to the partition's fetch ends from other processes
// (Names.Ended) until the returned function runs. Without a subscription
// (no connection, or it failed: logged) the done reports free the hosts.
func (pt *partition) hearEnds() func() {
	if pt.s.o.JS == nil || pt.s.o.JS.Conn() == nil {
		return func() {}
	}
	ends := pt.ends
	sub, err := pt.s.o.JS.Conn().Subscribe(pt.s.o.Names.Ended(pt.p), func(m *nats.Msg) {
		var fd messages.FetchDone
		if messages.Decode(m.Data, &fd) != nil || fd.Partition != pt.p || fd.Retry || fd.Expired {
			return // a hint only: the done report carries the same
		}
		select {
		case ends <- fd:
		default:
		}
	})
	if err != nil {
		pt.log.Warn("not listening for the fetchers' early word of a fetch's end; hosts wait for the done reports", "subject", pt.s.o.Names.Ended(pt.p), "err", err)
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}

// ended frees fd's host in memory when its task was recorded and its next
// task is reserved and due at once, and hands that task to the fetchers. The
// step that records the task waits for fd's done report (expected): applied
// before the page's links and record are published, a done could be
// durable while they are lost in a crash. Anything else is left to the done
// report, as if the signal had not come.
func (pt *partition) ended(ctx context.Context, fd messages.FetchDone, now time.Time) {
	h := pt.hosts[fd.Host]
	if pt.unrecordedTask(fd) {
		// Handed before the step that records it (this same way, most
		// often): the end counts once that step has run (recordedEarly).
		if len(pt.endsLater) >= endsBuffer {
			clear(pt.endsLater) // hints only; the done reports remain
		}
		if pt.endsLater == nil {
			pt.endsLater = map[string]endLater{}
		}
		pt.endsLater[fd.TaskID] = endLater{fd: fd, at: now}
		pt.sendThen(ctx, h, fd, now)
		// The hint waits for the record: hurry it if the host is due soon
		// (with a task sent, the one after it needs the record's
		// reservation).
		pt.hurryFor(fd, now)
		return
	}
	if h == nil || h.inFlight == nil || h.inFlight.Task.ID != fd.TaskID || h.unrecorded || !h.reserved() ||
		pt.budgetOut || pt.expected[fd.TaskID] != nil {
		return
	}
	nb, capped, _ := pt.rest(fd, now)
	// Only a host due now: a rest counted from here, not from the report's
	// arrival, would shorten the margin the politeness gap keeps (rest).
	if capped || nb.After(now) || !pt.grant(ctx) {
		return
	}
	// Counted before the hand: whoever sees the next task sees the count.
	pt.s.Stats.EndedEarly.Add(1)
	d := pt.handReserved(ctx, h, fd, nb, now, now)
	if pt.expected == nil {
		pt.expected = map[string]*preDone{}
	}
	pt.expected[fd.TaskID] = &d
}

// reported takes the done report m (stream sequence seq) of a task that
// ended early: the host's next task, handed already, goes to the next step
// with it. False when fd's task did not end early.
func (pt *partition) reported(fd messages.FetchDone, m jetstream.Msg, seq uint64) (preDone, bool) {
	e := pt.expected[fd.TaskID]
	if e == nil {
		return preDone{}, false
	}
	delete(pt.expected, fd.TaskID)
	e.msg, e.seq = m, seq
	return *e, true
}

// sendThen publishes the task after h's task in flight, which fd ended
// before the step recording it has run, from the entry after the
// reservation that task came from (host.then): the host's turnaround then
// waits neither for that step nor for the report (on a loaded machine the
// step waits for the commit in progress: a millisecond or more, in a third
// of a few hosts' turns). Only a host due at once after fd, in a crawl
// without --max-pages (whose budget would be taken twice: here and by the
// step that records the task). The issue waits in host.sent for the step
// after the one recording fd's task: that one applies fd's report and pops
// it. See docs/frontier.md, "Two tasks reserved".
func (pt *partition) sendThen(ctx context.Context, h *host, fd messages.FetchDone, now time.Time) {
	if h.then == nil || h.sent != nil || h.inFlight == nil || h.inFlight.Task.ID != fd.TaskID ||
		pt.budgetOut || pt.s.o.MaxPages > 0 {
		return
	}
	if nb, capped, _ := pt.rest(fd, now); capped || nb.After(now) {
		return
	}
	r := pt.issue(h, now)
	r.Next, h.then = h.then, nil
	pt.publishReserved(ctx, []store.Issue{r})
	if !pt.published[r.Next.TaskID] {
		return // not sent: the step that records fd's task reserves again
	}
	h.sent = &r
	pt.s.Stats.SentThen.Add(1)
}

// unrecordedTask tells whether fd is the report of its host's task in flight
// published ahead of the write that records it (host.unrecorded), or of the
// task sent after that one (host.sent).
func (pt *partition) unrecordedTask(fd messages.FetchDone) bool {
	h := pt.hosts[fd.Host]
	return h != nil && (h.unrecorded && h.inFlight != nil && h.inFlight.Task.ID == fd.TaskID || h.sentTask(fd.TaskID))
}

// endLater is a fetch's end heard before the step that records its task.
type endLater struct {
	fd messages.FetchDone
	at time.Time
}

// endedLater takes the fetch ends heard for tasks that steps have now
// recorded (recordedEarly).
func (pt *partition) endedLater(ctx context.Context, taskIDs []string) {
	for _, id := range taskIDs {
		if e, ok := pt.endsLater[id]; ok {
			delete(pt.endsLater, id)
			pt.ended(ctx, e.fd, e.at)
		}
	}
}
