package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// countingWriter counts what a sink loop asks of its writer.
type countingWriter struct {
	mu             sync.Mutex
	written, syncs int
}

func (c *countingWriter) write(b []jetstream.Msg) (map[jetstream.Msg]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written += len(b)
	return nil, nil
}

func (c *countingWriter) sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncs++
	return nil
}

func (c *countingWriter) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written, c.syncs
}

func (c *countingWriter) rotateIfDue() error { return nil }
func (c *countingWriter) close() error       { return nil }

// A sink writes a batch's messages as they come and leaves only the sync
// for the batch's end: the end of a run waits for one sync, not for the
// compression of its last second of pages. Acks follow the sync.
func TestSinkWritesAsTheBatchGathers(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := EnsureJSONL(ctx, js, names)
	if err != nil {
		t.Fatal(err)
	}
	old := syncEvery
	syncEvery = time.Hour // the batch ends only at the flush
	defer func() { syncEvery = old }()
	w := &countingWriter{}
	flush := newFlushSignal()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, c, w, flush, bus.DeadLetters{JS: js, Names: names, Service: "archive"}, &Stats{}, log)
	}()
	for i := range 5 {
		doc, _ := json.Marshal(messages.Parsed{V: messages.Version, URL: fmt.Sprintf("http://a.test/%d", i), Status: 200})
		testbus.Publish(t, js, names.PagesParsed(), doc)
	}
	waitFor(t, "5 messages written before the batch ends", func() bool { n, _ := w.counts(); return n == 5 })
	if _, syncs := w.counts(); syncs != 0 {
		t.Fatalf("%d syncs before the batch ended", syncs)
	}
	if ci, err := c.Info(ctx); err != nil || ci.NumAckPending != 5 {
		t.Fatalf("before the sync: %v acks pending (%v), want 5", ci.NumAckPending, err)
	}
	flush.Now()
	waitFor(t, "the batch synced and acknowledged", func() bool {
		ci, err := c.Info(ctx)
		_, syncs := w.counts()
		return err == nil && syncs == 1 && ci.NumAckPending == 0 && ci.NumPending == 0
	})
	if n, _ := w.counts(); n != 5 {
		t.Errorf("%d messages written, want 5 (each once)", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
