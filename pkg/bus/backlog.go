package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Backlog counts the messages consumer c has yet to be given or to
// acknowledge, for a consumer of every subject its stream holds (the
// archive sinks, --out, the parser).
//
// The consumer's own pending count lags a publish: the server tells its
// consumers of a stored message from a queue, after the publisher's ack.
// A message published just before (a crawl's last page) may not be counted
// there yet; the stream's last sequence already is. So the messages past
// the last one given to c are counted from the stream.
func Backlog(ctx context.Context, js jetstream.JetStream, c jetstream.Consumer) (uint64, error) {
	ci, err := c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("consumer %s: %w", c.CachedInfo().Name, err)
	}
	st, err := js.Stream(ctx, ci.Stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", ci.Stream, err)
	}
	state := st.CachedInfo().State
	return BacklogOf(ci, state.Msgs, state.LastSeq), nil
}

// BacklogOf is Backlog from a consumer's info and its stream's message
// count and last sequence, for a caller that read the stream already.
func BacklogOf(ci *jetstream.ConsumerInfo, msgs, lastSeq uint64) uint64 {
	undelivered := ci.NumPending
	if msgs > 0 && lastSeq > ci.Delivered.Stream {
		undelivered = max(undelivered, min(lastSeq-ci.Delivered.Stream, msgs))
	}
	return undelivered + uint64(ci.NumAckPending)
}
