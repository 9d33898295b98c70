package bus

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KeyValue creates or binds a key-value bucket, with the replicas js was
// marked with (WithReplicas) unless cfg sets them. Replicas starting together
// race to create the same bucket, and the loser of the race gets "stream
// name already in use" from some servers (2.9) instead of the bucket: it
// tries again, and then finds the bucket there.
func KeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = Replicas(js)
	}
	for attempt := 1; ; attempt++ {
		kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
		if err == nil || attempt == 5 || !raced(err) {
			return kv, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
}

func raced(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamNameInUse {
		return true
	}
	return strings.Contains(err.Error(), "already in use")
}
