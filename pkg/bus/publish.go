package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublishAll publishes msgs asynchronously with the given message IDs (for
// JetStream de-duplication) and waits until every one is stored. It returns the
// first error; callers retry the whole set, which the IDs make harmless.
func PublishAll(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg, ids []string) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for i, m := range msgs {
		f, err := js.PublishMsgAsync(m, jetstream.WithMsgID(ids[i]))
		if err != nil {
			return fmt.Errorf("publish to %s: %w", m.Subject, err)
		}
		futures = append(futures, f)
	}
	// An ack can be lost (a stream leader moving between the publish and
	// its ack) and nats.go would wait for it forever: give up after
	// PublishAckWait, and let the caller publish again under the same IDs.
	timeout := time.NewTimer(PublishAckWait)
	defer timeout.Stop()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("publish to %s: %w", f.Msg().Subject, err)
		case <-timeout.C:
			return fmt.Errorf("publish to %s: no ack within %v", f.Msg().Subject, PublishAckWait)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// PublishAckWait bounds the wait for a batch's publish acks.
const PublishAckWait = 10 * time.Second
