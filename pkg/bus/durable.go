package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Durable is a durable consumer of the topology with what Pull needs to put
// it back. The work-queue consumers keep their state in the server's memory
// (Topology.consumers), so a lone server that restarts forgets them; their
// streams keep every message not yet acked, and a consumer created again
// with the same settings delivers those again.
type Durable struct {
	jetstream.Consumer
	js     jetstream.JetStream
	stream string
	cfg    jetstream.ConsumerConfig
	log    *slog.Logger
}

// Consumer returns a durable consumer the topology created; Pull recreates
// it if the server loses it, and says so on log.
func Consumer(ctx context.Context, js jetstream.JetStream, stream, durable string, log *slog.Logger) (*Durable, error) {
	c, err := js.Consumer(ctx, stream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("consumer %s on stream %s is missing: was the topology ensured with the same --prefix and --partition-count?", durable, stream)
	}
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Durable{Consumer: c, js: js, stream: stream, cfg: c.CachedInfo().Config, log: log}, nil
}

// restore creates the consumer again if the server says it no longer has
// it, and reports whether it did. A server that does not answer (a link
// down, a restart in progress) is not an error here: the client reconnects
// and says so itself, and the next missed heartbeat asks again. The error
// is a consumer that is gone and could not be created.
func (d *Durable) restore(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := d.Consumer.Info(ctx); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false, nil
	}
	if _, err := d.js.CreateOrUpdateConsumer(ctx, d.stream, d.cfg); err != nil {
		return false, fmt.Errorf("consumer %s on stream %s is gone and could not be created again: %w", d.cfg.Durable, d.stream, err)
	}
	d.log.Warn("consumer was gone (a NATS server restarted?); created it again, its stream's unacked messages are delivered again",
		"consumer", d.cfg.Durable, "stream", d.stream)
	return true, nil
}
