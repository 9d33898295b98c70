package bus

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Inbox carries work-queue messages from one service to another in the same
// process, in place of publishing them to a stream and pulling them back:
// `trawler run`'s frontier gives its fetch tasks to its fetcher this way
// when no other process can reach its NATS server (no --nats-listen), which
// saves a store write, a delivery and an ack a page, and the time they take
// between a host's response and its next request.
//
// An Inbox holds nothing durable. Its sender must be able to tell, after a
// crash, which messages were never handled, and send them again; the
// frontier can (a task recorded in flight is published again when neither
// the fetch stream nor a done report holds it). Within the process, HeldOn
// says which messages were handed and not yet acked or terminated, which
// the sender counts as sent when it reloads.
//
// Hand never waits: what the inbox has no room for (the receiver is
// behind) the sender publishes to the stream as before.
type Inbox struct {
	stream string // the stream the messages stand in for, for their metadata
	ch     chan jetstream.Msg

	mu   sync.Mutex
	held map[string]string // IDs handed, not yet acked or terminated: their subjects
	done chan struct{}     // closed by Close: no more redeliveries
	shut bool
}

// NewInbox returns an inbox for messages of stream, holding up to size
// messages not yet taken by the receiver.
func NewInbox(stream string, size int) *Inbox {
	return &Inbox{stream: stream, ch: make(chan jetstream.Msg, size), held: map[string]string{}, done: make(chan struct{})}
}

// Hand gives the receiver as many of msgs (whose message IDs are ids), in
// order, as it has room for, and returns how many: the sender publishes the
// rest. A closed inbox takes none.
func (in *Inbox) Hand(msgs []*nats.Msg, ids []string) int {
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.shut {
		return 0
	}
	n := min(len(msgs), cap(in.ch)-len(in.ch))
	for i, m := range msgs[:n] {
		in.held[ids[i]] = m.Subject
		in.ch <- &inboxMsg{in: in, msg: m, id: ids[i], delivered: 1}
	}
	return n
}

// HeldOn returns the IDs of the messages on subject that were handed and
// are not yet acked or terminated: waiting, being handled, or handed back.
func (in *Inbox) HeldOn(subject string) []string {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var ids []string
	for id, subj := range in.held {
		if subj == subject {
			ids = append(ids, id)
		}
	}
	return ids
}

// Messages is the receiver's side.
func (in *Inbox) Messages() <-chan jetstream.Msg { return in.ch }

// Close refuses further hands and drops the messages handed back for later.
// What was handed and not acked is the sender's to send again on its next
// start, as after a crash.
func (in *Inbox) Close() {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.shut {
		in.shut = true
		close(in.done)
	}
}

// Merge forwards the messages of pulled and of the inbox to one channel,
// closed once pulled is closed (Pull closes it when its context ends).
func (in *Inbox) Merge(ctx context.Context, pulled <-chan jetstream.Msg) <-chan jetstream.Msg {
	if in == nil {
		return pulled
	}
	out := make(chan jetstream.Msg)
	go func() {
		defer close(out)
		for {
			var m jetstream.Msg
			var ok bool
			select {
			case m, ok = <-pulled:
				if !ok {
					return
				}
			case m = <-in.ch:
			case <-ctx.Done():
				return
			}
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (in *Inbox) settle(id string) {
	in.mu.Lock()
	delete(in.held, id)
	in.mu.Unlock()
}

// again hands m back to the receiver after delay, as a redelivery.
func (in *Inbox) again(m *inboxMsg, delay time.Duration) {
	m.mu.Lock()
	m.delivered++
	m.mu.Unlock()
	go func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-in.done:
			return
		}
		select {
		case in.ch <- m:
		case <-in.done:
		}
	}()
}

// inboxMsg is a message handed through an Inbox. It reads as the stream's
// message would (subject, headers, body, a delivery count); Ack and Term
// settle it, Nak hands it back after the delay, InProgress does nothing (no
// ack wait runs).
type inboxMsg struct {
	in  *Inbox
	msg *nats.Msg
	id  string

	mu        sync.Mutex
	delivered uint64
	settled   bool
}

func (m *inboxMsg) Metadata() (*jetstream.MsgMetadata, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &jetstream.MsgMetadata{Stream: m.in.stream, NumDelivered: m.delivered, Timestamp: time.Now()}, nil
}
func (m *inboxMsg) Data() []byte                    { return m.msg.Data }
func (m *inboxMsg) Headers() nats.Header            { return m.msg.Header }
func (m *inboxMsg) Subject() string                 { return m.msg.Subject }
func (m *inboxMsg) Reply() string                   { return "" }
func (m *inboxMsg) Ack() error                      { m.finish(); return nil }
func (m *inboxMsg) DoubleAck(context.Context) error { m.finish(); return nil }
func (m *inboxMsg) Term() error                     { m.finish(); return nil }
func (m *inboxMsg) TermWithReason(string) error     { m.finish(); return nil }
func (m *inboxMsg) InProgress() error               { return nil }
func (m *inboxMsg) Nak() error                      { return m.NakWithDelay(0) }
func (m *inboxMsg) NakWithDelay(d time.Duration) error {
	m.mu.Lock()
	settled := m.settled
	m.mu.Unlock()
	if !settled {
		m.in.again(m, d)
	}
	return nil
}

func (m *inboxMsg) finish() {
	m.mu.Lock()
	first := !m.settled
	m.settled = true
	m.mu.Unlock()
	if first {
		m.in.settle(m.id)
	}
}
