package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// ErrPoison marks an error caused by the message itself (undecodable, wrong
// version, invalid fields): retrying cannot help, so it is dead-lettered at once.
var ErrPoison = errors.New("poison message")

// Poison wraps err as ErrPoison.
func Poison(err error) error { return fmt.Errorf("%w: %w", ErrPoison, err) }

// DeadLetters parks messages a service cannot process on <prefix>.dlq.<service>
// with the reason, and terminates them so they never block their partition.
type DeadLetters struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	Service    string
	MaxDeliver int // deliveries after which a message is parked on receipt
}

// Park publishes msg to the dead-letter subject and terminates it.
func (d DeadLetters) Park(ctx context.Context, msg jetstream.Msg, reason string) error {
	dl := messages.DeadLetter{
		V: messages.Version, Service: d.Service, Subject: msg.Subject(),
		Reason: reason, At: time.Now().UTC(), Data: msg.Data(), Headers: msg.Headers(),
	}
	if md, err := msg.Metadata(); err == nil {
		dl.Stream, dl.Sequence, dl.Deliveries = md.Stream, md.Sequence.Stream, md.NumDelivered
	}
	data, err := json.Marshal(dl)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("dlq:%s:%s:%d", d.Service, dl.Stream, dl.Sequence)
	if _, err := d.JS.Publish(ctx, d.Names.DeadLetter(d.Service), data, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("dead-letter: %w", err)
	}
	return msg.Term()
}

// ParkOrLog parks msg and logs when even that fails (the message is then
// redelivered after its ack wait and parked on a later try).
func (d DeadLetters) ParkOrLog(ctx context.Context, msg jetstream.Msg, reason string, log *slog.Logger) {
	if err := d.Park(ctx, msg, reason); err != nil {
		log.Error("dead-letter failed", "subject", msg.Subject(), "err", err)
	}
}

// CrashLooping reports whether msg was delivered more than MaxDeliver times,
// which means processing it kept killing or wedging its consumer.
func (d DeadLetters) CrashLooping(msg jetstream.Msg) bool {
	md, err := msg.Metadata()
	return err == nil && d.MaxDeliver > 0 && md.NumDelivered > uint64(d.MaxDeliver)
}
