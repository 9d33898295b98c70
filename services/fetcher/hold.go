package fetcher

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// holdUntilDue passes tasks on to the workers when their Trawler-Not-Before
// time has come, and not before their Trawler-Hold-For has passed since
// they arrived: the frontier's clock and this one need not agree. The
// frontier issues a task a little before its host's politeness gap ends so
// that the trip through NATS overlaps the gap; held here, such a task takes
// no worker. Tasks still held when ctx ends are left
// unacked: JetStream redelivers them after their ack wait.
func holdUntilDue(ctx context.Context, in <-chan jetstream.Msg) <-chan jetstream.Msg {
	out := make(chan jetstream.Msg)
	var held sync.WaitGroup
	pass := func(m jetstream.Msg) {
		select {
		case out <- m:
		case <-ctx.Done():
		}
	}
	go func() {
		defer func() { held.Wait(); close(out) }()
		for m := range in {
			wait := max(time.Until(notBefore(m)), holdFor(m))
			if wait <= 0 {
				pass(m)
				continue
			}
			held.Add(1)
			go func() {
				defer held.Done()
				timer := time.NewTimer(wait)
				defer timer.Stop()
				select {
				case <-timer.C:
					pass(m)
				case <-ctx.Done():
				}
			}()
		}
	}()
	return out
}

// notBefore reads a task's Trawler-Not-Before header (zero when absent or
// malformed: the task is due now, and the worker decodes and judges it).
func notBefore(m jetstream.Msg) time.Time {
	h := m.Headers()
	if h == nil {
		return time.Time{}
	}
	ns, err := strconv.ParseInt(h.Get(messages.HeaderNotBefore), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// holdFor reads a task's Trawler-Hold-For header (zero when absent or
// malformed).
func holdFor(m jetstream.Msg) time.Duration {
	h := m.Headers()
	if h == nil {
		return 0
	}
	ns, err := strconv.ParseInt(h.Get(messages.HeaderHoldFor), 10, 64)
	if err != nil || ns < 0 {
		return 0
	}
	return time.Duration(ns)
}
