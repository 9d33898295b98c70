package frontier

// Loading a partition from its store: at start, after a restart or a move
// of ownership, and when the store is found ahead of memory.

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// load rebuilds memory from the store: queued hosts become due now, tasks in
// flight keep their leases. A task recorded in flight but never published
// (a crash between the two) is published again; see unpublished.
func (pt *partition) load(ctx context.Context) error {
	var st store.PartitionState
	if err := bus.Retry(ctx, "load partition", pt.log.Warn, nil, func() (err error) {
		if st, err = pt.s.o.Store.Load(ctx, pt.p); err != nil {
			return err
		}
		pt.lastApplied, err = pt.s.o.Store.LastApplied(ctx, pt.p)
		return err
	}); err != nil {
		return err
	}
	pt.applied = st.Applied
	now := time.Now()
	var inFlight []store.InFlight
	for _, hs := range st.Hosts {
		h := pt.host(hs.Host)
		h.queued = hs.Queued
		pt.setTask(h, hs.InFlight)
		h.nextAt = hs.NotBefore // politeness holds across the restart
		if h.inFlight != nil {
			pt.leases.push(h.inFlight.LeaseUntil, h.name, h.inFlight.Task.ID)
			inFlight = append(inFlight, *h.inFlight)
		}
		pt.schedule(h, now)
	}
	if len(inFlight) == 0 && !pt.s.early {
		return nil
	}
	var lost []store.InFlight
	if err := bus.Retry(ctx, "find unpublished tasks", pt.log.Warn, nil, func() (err error) {
		lost, err = pt.unpublished(ctx, inFlight)
		return err
	}); err != nil {
		return err
	}
	recorded := make(map[string]bool, len(inFlight))
	for _, t := range inFlight {
		recorded[t.Task.ID] = true
	}
	pt.ahead = nil
	for id := range pt.published {
		if !recorded[id] {
			if pt.ahead == nil {
				pt.ahead = map[string]time.Time{}
			}
			pt.ahead[id] = now.Add(aheadHold)
		}
	}
	if len(pt.ahead) > 0 {
		pt.log.Info("tasks published before the last stop but not recorded: their done reports wait until they are", "tasks", len(pt.ahead), "at_most", aheadHold)
	}
	if len(lost) > 0 {
		pt.log.Info("publishing tasks recorded but not published before the last stop", "tasks", len(lost))
		return pt.publish(ctx, lost)
	}
	return nil
}

// aheadHold bounds how long a done report of a task published ahead of its
// record waits for the replayed step that records it. That step comes with
// the lost step's intake, which a restarted server delivers at once and a
// surviving consumer after its ack wait (15 s).
const aheadHold = time.Minute

// unpublished returns the tasks that are neither waiting in the fetch stream
// nor reported in a done message. A fetcher publishes a task's done message
// before it acks (and so removes) the task, so reading the fetch stream first
// and the done messages second cannot miss a task that moves between them.
// Both reads are bounded by the tasks in flight: one per host.
func (pt *partition) unpublished(ctx context.Context, tasks []store.InFlight) ([]store.InFlight, error) {
	seen := map[string]bool{}
	scan := func(stream, subject string, id func([]byte) string) error {
		st, err := pt.s.o.JS.Stream(ctx, stream)
		if err != nil {
			return err
		}
		for seq := uint64(1); ; seq++ {
			m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			seen[id(m.Data)] = true
			seq = m.Sequence
		}
	}
	taskID := func(data []byte) string {
		var t messages.FetchTask
		_ = messages.Decode(data, &t)
		return t.ID
	}
	doneID := func(data []byte) string {
		var d messages.FetchDone
		_ = messages.Decode(data, &d)
		return d.TaskID
	}
	if err := scan(pt.s.o.Names.StreamFetch(), pt.s.o.Names.Fetch(pt.p), taskID); err != nil {
		return nil, err
	}
	if err := scan(pt.s.o.Names.StreamFrontier(), pt.s.o.Names.FrontierDone(pt.p), doneID); err != nil {
		return nil, err
	}
	// Handed to this process's fetcher and not yet done: as good as in
	// the stream (a partition reloading within the process).
	for _, id := range pt.s.o.Inbox.HeldOn(pt.s.o.Names.Fetch(pt.p)) {
		seen[strings.TrimPrefix(id, "task:")] = true
	}
	var lost []store.InFlight
	for _, t := range tasks {
		if !seen[t.Task.ID] {
			lost = append(lost, t)
		}
	}
	if pt.s.early {
		pt.published = seen
	}
	return lost, nil
}
