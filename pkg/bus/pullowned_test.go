package bus_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/bus"
)

// A partition that stops and runs again in the same process (an error, or
// its ownership back) pulls on the same consumer. A message published just
// after the first pull stopped must go to the second: with a pull whose
// request still stood on the server, it went to the stopped pull's inbox
// and sat out its ack wait (a frontier test after a restart, about one run
// in twenty under -race).
func TestPullOwnedHandsTheNextMessageToTheNextPull(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons, err := bus.Consumer(ctx, js, names.StreamFrontier(), names.ConsumerFrontier(0), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		msgs, stop, err := bus.PullOwned(ctx, cons, 16, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			select {
			case m := <-msgs:
				if want := fmt.Sprint("m", i-1); string(m.Data()) != want {
					t.Fatalf("pull %d got %q, want %q", i, m.Data(), want)
				}
				_ = m.Ack()
			case <-time.After(3 * time.Second):
				t.Fatalf("pull %d: the message published after the previous pull stopped never came (ack wait)", i)
			}
		}
		stop()
		if _, err := js.Publish(ctx, names.FrontierNew(0), []byte(fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
}
