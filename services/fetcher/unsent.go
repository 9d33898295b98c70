package fetcher

// Results whose publish failed (a NATS leader moving, a publish ack that
// never came) are kept by task ID, so that the task's redelivery publishes
// them again instead of fetching the URL a second time: a second request
// to the host within its gap, and a page twice in the stream once the
// duplicate window has passed. The message IDs are the first try's, so a
// first publish that was stored after all is dropped by JetStream.

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// Bounds of the kept results: a replica that cannot publish for long keeps
// the most recent; an evicted one is fetched again on redelivery.
const (
	unsentMax      = 256
	unsentMaxBytes = 64 << 20
)

type unsentResult struct {
	out   []*nats.Msg
	ids   []string
	bytes int
}

type unsentResults struct {
	mu    sync.Mutex
	byID  map[string]unsentResult
	order []string
	bytes int
}

// keep remembers the messages of task id that could not be published.
func (u *unsentResults) keep(id string, out []*nats.Msg, ids []string) {
	n := 0
	for _, m := range out {
		n += len(m.Data) + len(m.Subject) + 256
		for k, v := range m.Header {
			n += len(k)
			for _, s := range v {
				n += len(s)
			}
		}
	}
	if n > unsentMaxBytes {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byID == nil {
		u.byID = map[string]unsentResult{}
	}
	if old, ok := u.byID[id]; ok {
		u.bytes -= old.bytes
	} else {
		u.order = append(u.order, id)
	}
	u.byID[id] = unsentResult{out: out, ids: ids, bytes: n}
	u.bytes += n
	for (len(u.byID) > unsentMax || u.bytes > unsentMaxBytes) && len(u.order) > 0 {
		oldest := u.order[0]
		u.order = u.order[1:]
		if r, ok := u.byID[oldest]; ok {
			u.bytes -= r.bytes
			delete(u.byID, oldest)
		}
	}
}

// take returns and forgets the kept messages of task id, if any.
func (u *unsentResults) take(id string) (out []*nats.Msg, ids []string, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.byID[id]
	if !ok {
		return nil, nil, false
	}
	delete(u.byID, id)
	u.bytes -= r.bytes
	for i, o := range u.order {
		if o == id {
			u.order = append(u.order[:i], u.order[i+1:]...)
			break
		}
	}
	return r.out, r.ids, true
}

// republishWindow is how long a failed publish is retried in place: a NATS
// node's restart or a stream leader's election takes seconds.
const republishWindow = 30 * time.Second

// publishAgain retries a failed publish of a task's result under the same
// message IDs, for up to s.republishFor, holding the task meanwhile
// (InProgress). Handing it back at once would let JetStream redeliver it to
// another fetcher replica, which has no kept result and fetches the URL
// again, at a time no politeness gap governs: the first publish may have
// been stored with only its ack lost, and the frontier already issued the
// host's next URL. It returns the last error when the window ends, or at
// once when the fetcher shuts down (ctx outlives shutdown: it is the
// workers' context, so the shutdown is Run's, s.life).
func (s *Service) publishAgain(ctx context.Context, m jetstream.Msg, url string, out []*nats.Msg, ids []string, err error) error {
	s.o.Log.Warn("publishing fetch result failed; retrying while holding the task", "url", url, "err", err, "for", s.republishFor)
	stopping := ctx.Done()
	if s.life != nil {
		stopping = s.life.Done()
	}
	deadline := time.Now().Add(s.republishFor)
	wait := 100 * time.Millisecond
	for tries := 1; time.Now().Add(wait).Before(deadline); tries++ {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		case <-stopping:
			return err
		}
		_ = m.InProgress()
		if err = bus.PublishAll(ctx, s.o.JS, out, ids); err == nil {
			s.Stats.Republished.Add(1)
			s.o.Log.Info("published fetch result after retrying", "url", url, "tries", tries+1)
			return nil
		}
		wait = min(2*wait, 2*time.Second)
	}
	return err
}
