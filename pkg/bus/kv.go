package bus

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KeyValue creates or binds a key-value bucket, with the replicas js was
// marked with (WithReplicas) unless cfg sets them.
//
// Replicas starting together race to create the same bucket. A replicated
// bucket is never created-or-updated blindly: on a NATS cluster an update
// sent while another client's create is still in flight may go unanswered
// (seen with nats-server 2.15), and a single server (2.9) answers the loser
// of a create race with "stream name already in use". So an existing bucket
// is bound and only updated when its TTL differs, a missing one is created,
// and each attempt has its own deadline and is retried.
func KeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = Replicas(js)
	}
	var kv jetstream.KeyValue
	err := retry(ctx, func(ctx context.Context) (err error) {
		kv, err = openKeyValue(ctx, js, cfg)
		return err
	})
	return kv, err
}

// retry runs one JetStream API exchange up to 8 times, each with its own
// deadline, while its errors are those of a race or an election.
func retry(ctx context.Context, exchange func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := exchange(actx)
		cancel()
		if err == nil || attempt == 8 || ctx.Err() != nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

func openKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case err == nil:
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, err
		}
		if st.TTL() == cfg.TTL {
			return kv, nil
		}
		return js.UpdateKeyValue(ctx, cfg)
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return js.CreateKeyValue(ctx, cfg)
	default:
		return nil, err
	}
}

// jsErrCodeSubjectsOverlap is the server's error code for a stream whose
// subjects overlap another's (nats.go names no constant for it).
const jsErrCodeSubjectsOverlap jetstream.ErrorCode = 10065

// retryable errors are those of a race or of a cluster still electing
// leaders: a lost create race, a bucket not yet visible, no answer in time.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamNameInUse,
		// NATS 2.9 may answer a lost create race with "subjects overlap
		// with an existing stream" (10065): the winner's stream holds the
		// bucket's subjects. Retried, the bucket is found and bound; a real
		// overlap with another stream still fails after the last attempt.
		errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeSubjectsOverlap,
		strings.Contains(err.Error(), "already in use"),
		errors.Is(err, jetstream.ErrBucketNotFound),
		errors.Is(err, jetstream.ErrBucketExists),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return true
	}
	return false
}
