package bus

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

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
		Service: d.Service, Subject: msg.Subject(),
		Reason: reason, At: time.Now().UTC(), Data: msg.Data(), Headers: msg.Headers(),
	}
	if md, err := msg.Metadata(); err == nil {
		dl.Stream, dl.Sequence, dl.Deliveries = md.Stream, md.Sequence.Stream, md.NumDelivered
	}
	data, err := messages.Encode(&dl)
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

// Recover wraps a one-message handler so that a panic while handling a
// message parks that message on the dead-letter subject, with the panic and
// where it happened as the reason, and the worker goes on with the next:
// data from the web must never kill a service, and a message that panics
// would otherwise be redelivered to the next replica and kill it too.
func (d DeadLetters) Recover(log *slog.Logger, handle func(context.Context, jetstream.Msg)) func(context.Context, jetstream.Msg) {
	return func(ctx context.Context, m jetstream.Msg) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			reason := fmt.Sprintf("panic: %v", r)
			if site := panicSite(); site != "" {
				reason += " at " + site
			}
			log.Error("a message made the "+d.Service+" panic; it is dead-lettered and the service goes on (please report it with the message from the dead-letter subject)",
				"subject", m.Subject(), "reason", reason)
			log.Debug("panic stack", "stack", string(debug.Stack()))
			d.ParkOrLog(ctx, m, reason, log)
		}()
		handle(ctx, m)
	}
}

// panicSite names the function, file and line that panicked, called from
// the deferred function that recovered: the first frame after the runtime's
// panic machinery.
func panicSite() string {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(1, pc)])
	inPanic := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic" || f.Function == "runtime.panicmem" || strings.HasPrefix(f.Function, "runtime.goPanic"):
			inPanic = true
		case inPanic && !strings.HasPrefix(f.Function, "runtime."):
			file := f.File
			if i := strings.LastIndex(file, "/"); i >= 0 {
				if j := strings.LastIndex(file[:i], "/"); j >= 0 {
					file = file[j+1:]
				}
			}
			return fmt.Sprintf("%s (%s:%d)", f.Function, file, f.Line)
		}
		if !more {
			return ""
		}
	}
}
