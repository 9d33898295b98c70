package bus_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// A message whose handling panics is parked on the dead-letter subject with
// the panic and its site as the reason, and the workers go on with the rest.
func TestRecoverParksThePanickingMessageAndGoesOn(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"one", "boom", "two", "three"} {
		testbus.Publish(t, js, "work", []byte(body))
	}
	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	pullCtx, stopPull := context.WithCancel(ctx)
	msgs, err := bus.Pull(pullCtx, cons, 4)
	if err != nil {
		t.Fatal(err)
	}
	dlq := bus.DeadLetters{JS: js, Names: names, Service: "parser"}
	var handled atomic.Int32
	handle := dlq.Recover(slog.New(slog.DiscardHandler), func(_ context.Context, m jetstream.Msg) {
		if string(m.Data()) == "boom" {
			var s []byte
			_ = s[:strings.Index(string(m.Data()), "\"")] // a slice with -1, as the lexer once did
		}
		handled.Add(1)
		_ = m.Ack()
	})
	done := make(chan struct{})
	go func() { bus.Work(pullCtx, 2, msgs, handle); close(done) }()

	c, err := js.OrderedConsumer(ctx, names.StreamDLQ(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(30 * time.Second))
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	var got messages.DeadLetter
	if err := json.Unmarshal(m.Data(), &got); err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != "boom" || !strings.Contains(got.Reason, "panic: runtime error: slice bounds out of range") ||
		!strings.Contains(got.Reason, "recover_test.go:") {
		t.Fatalf("dead letter %q with reason %q", got.Data, got.Reason)
	}
	testutil.WaitFor(30*time.Second, 10*time.Millisecond, func() bool { return handled.Load() >= 3 })
	if n := handled.Load(); n != 3 {
		t.Fatalf("handled %d of the 3 good messages after the panic", n)
	}
	stopPull()
	<-done
}
