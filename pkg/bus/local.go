package bus

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Outcome is what the handler of a LocalMsg did with it.
type Outcome int

const (
	Unsettled Outcome = iota // neither acked, nor handed back, nor terminated
	Acked
	Naked      // handed back: to be handled again after Delay
	Terminated // given up (dead-lettered): not to be handled again
)

// LocalMsg is a message handed from one service to another in the same
// process, never stored on the bus: `trawler run` gives its parser the
// fetched page this way when no other process can read pages.fetched. It
// reads as the message it stands for (subject, headers, body), and its
// metadata are those of the message whose ack makes its work durable (the
// fetch task): a consumer's dead-letter and crash-loop rules then apply to
// that one. Ack, Nak and Term only record the outcome, which the sender
// reads once the handler returns and acts on the carrier.
type LocalMsg struct {
	msg     *nats.Msg
	carrier jetstream.Msg

	mu      sync.Mutex
	outcome Outcome
	delay   time.Duration
}

// NewLocalMsg wraps msg, carried by (durable through) carrier.
func NewLocalMsg(msg *nats.Msg, carrier jetstream.Msg) *LocalMsg {
	return &LocalMsg{msg: msg, carrier: carrier}
}

// Outcome is what the handler did, and for Naked after how long it wants
// the message again.
func (m *LocalMsg) Outcome() (Outcome, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.outcome, m.delay
}

func (m *LocalMsg) settle(o Outcome, delay time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outcome == Unsettled {
		m.outcome, m.delay = o, delay
	}
	return nil
}

func (m *LocalMsg) Metadata() (*jetstream.MsgMetadata, error) { return m.carrier.Metadata() }
func (m *LocalMsg) Data() []byte                              { return m.msg.Data }
func (m *LocalMsg) Headers() nats.Header                      { return m.msg.Header }
func (m *LocalMsg) Subject() string                           { return m.msg.Subject }
func (m *LocalMsg) Reply() string                             { return "" }
func (m *LocalMsg) Ack() error                                { return m.settle(Acked, 0) }
func (m *LocalMsg) DoubleAck(context.Context) error           { return m.settle(Acked, 0) }
func (m *LocalMsg) Nak() error                                { return m.settle(Naked, 0) }
func (m *LocalMsg) NakWithDelay(d time.Duration) error        { return m.settle(Naked, d) }
func (m *LocalMsg) InProgress() error                         { return m.carrier.InProgress() }
func (m *LocalMsg) Term() error                               { return m.settle(Terminated, 0) }
func (m *LocalMsg) TermWithReason(string) error               { return m.settle(Terminated, 0) }

var _ jetstream.Msg = (*LocalMsg)(nil)
