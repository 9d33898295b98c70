package bus

import (
	"context"
	"fmt"

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
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("publish to %s: %w", f.Msg().Subject, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
