package app

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/services/archive"
)

// run's --out is handed its documents in process only when nothing else
// reads pages.parsed, and only once the consumer an earlier run left there
// has written everything it holds: then the consumer goes, or the stream
// would keep every document for it.
func TestOutInProcessOnlyWithNothingLeftOnTheStream(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	d := &Deps{JS: js, Names: names}
	if direct, err := outInProcess(ctx, d); err != nil || direct {
		t.Fatalf("pages published (--nats-listen, --archive): direct %v (%v), want the stream's consumer", direct, err)
	}
	d.pagesInProcess = true
	if direct, err := outInProcess(ctx, d); err != nil || !direct {
		t.Fatalf("nothing else reads the stream: direct %v (%v), want it", direct, err)
	}

	// A run with --nats-listen left its consumer, and a document for it.
	w := archive.NewOut(archive.OutOptions{JS: js, Names: names, Path: filepath.Join(t.TempDir(), "out.jsonl"), Every: 10 * time.Millisecond})
	if err := w.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	testbus.Publish(t, js, names.PagesParsed(), []byte(`{"v":1,"task_id":"t1","url":"http://a.test/"}`))
	if direct, err := outInProcess(ctx, d); err != nil || direct {
		t.Fatalf("a document left for the consumer: direct %v (%v), want the consumer to write it", direct, err)
	}
	if _, err := js.Consumer(ctx, names.StreamParsed(), archive.ConsumerOut); err != nil {
		t.Fatalf("the consumer with a document left: %v", err)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	testutil.Eventually(t, 10*time.Second, "the document written", func() bool { return w.Lines.Load() == 1 })
	if err := w.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if direct, err := outInProcess(ctx, d); err != nil || !direct {
		t.Fatalf("everything written: direct %v (%v), want it", direct, err)
	}
	if _, err := js.Consumer(ctx, names.StreamParsed(), archive.ConsumerOut); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the consumer after a direct start: %v, want it deleted", err)
	}
}
