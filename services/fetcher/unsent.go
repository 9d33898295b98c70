package fetcher

// Results whose publish failed (a NATS leader moving, a publish ack that
// never came) are kept by task ID, so that the task's redelivery publishes
// them again instead of fetching the URL a second time: a second request
// to the host within its gap, and a page twice in the stream once the
// duplicate window has passed. The message IDs are the first try's, so a
// first publish that was stored after all is dropped by JetStream.

import (
	"sync"

	"github.com/nats-io/nats.go"
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
