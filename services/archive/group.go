package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Options configure both sinks of an archive directory.
type Options struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	Dir        string
	MaxSize    int64
	MaxAge     time.Duration
	GzipLevel  int // the WARC records' (warc.Options.GzipLevel)
	UserAgent  string
	MaxDeliver int
	Log        *slog.Logger
	Registerer prometheus.Registerer
	// Direct: the crawl's parser hands every page (HandPage) and document
	// (HandDoc) in process, and the sinks have no consumers: `trawler run`
	// when nothing else can read its streams (directSink).
	Direct bool
}

// Archive runs a WARC sink and a JSON Lines sink over one directory: what
// `trawler archive` and `trawler run --archive` run. It follows the
// services' contract (docs/architecture.md): New wires and starts nothing;
// Run works until its ctx ends. Two steps around Run serve `trawler run`:
// Prepare, before the crawl's services start, creates the sinks' consumers
// so that they see every page; Drain, at a finished crawl's end, waits until
// the sinks have written what their streams hold.
type Archive struct {
	WARC  *WARCSink
	JSONL *JSONLSink
	o     Options

	prepared bool
	// stopped is closed when Run returns: Drain stops waiting for sinks
	// that no longer run.
	stopped chan struct{}
}

// New builds an archive over o's directory; nothing is created or started
// until Prepare or Run. The sinks' counters are registered on o.Registerer.
func New(o Options) *Archive {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Archive{
		WARC: NewWARC(WARCOptions{JS: o.JS, Names: o.Names, Dir: o.Dir, MaxSize: o.MaxSize, MaxAge: o.MaxAge, GzipLevel: o.GzipLevel,
			UserAgent: o.UserAgent, MaxDeliver: o.MaxDeliver, Log: o.Log.With("sink", "warc"), Registerer: o.Registerer}),
		JSONL: NewJSONL(JSONLOptions{JS: o.JS, Names: o.Names, Dir: o.Dir, MaxSize: o.MaxSize, MaxAge: o.MaxAge,
			MaxDeliver: o.MaxDeliver, Log: o.Log.With("sink", "jsonl"), Registerer: o.Registerer}),
		o: o, stopped: make(chan struct{}),
	}
}

// Prepare creates both sinks' durable consumers, so that no page published
// from now on is missed: call it before the crawl's services start. Run
// calls it when it was not called.
func (a *Archive) Prepare(ctx context.Context) error {
	if a.o.Dir == "" {
		return errors.New("archive: no directory")
	}
	if a.prepared {
		return nil
	}
	if a.o.Direct {
		if err := a.WARC.openDirect(); err != nil {
			return err
		}
		if err := a.JSONL.openDirect(); err != nil {
			a.WARC.direct.w.close()
			return err
		}
		a.prepared = true
		return nil
	}
	if _, err := EnsureWARC(ctx, a.o.JS, a.o.Names); err != nil {
		return err
	}
	if _, err := EnsureJSONL(ctx, a.o.JS, a.o.Names); err != nil {
		return err
	}
	a.prepared = true
	return nil
}

// Run prepares the archive if Prepare was not called, then runs both sinks
// until ctx ends; they complete their open files before it returns. A sink
// that fails stops the other, and Run returns the failure. Run once.
func (a *Archive) Run(ctx context.Context) error {
	defer close(a.stopped)
	if !a.prepared {
		if err := a.Prepare(ctx); err != nil {
			return starting(ctx, err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	go func() { done <- a.WARC.Run(runCtx) }()
	go func() { done <- a.JSONL.Run(runCtx) }()
	var errs []error
	for range 2 {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
			cancel() // the other sink too: the archive is not whole
		}
	}
	return errors.Join(errs...)
}

// Drain waits until both sinks have written and acknowledged everything
// their streams hold for them, or ctx ends (the rest is written by the next
// run), or Run has returned. Call it while Run runs, once the crawl has
// finished, then end Run's ctx.
func (a *Archive) Drain(ctx context.Context) error {
	a.WARC.flush.Now() // nothing more is coming: write each batch as it is pulled
	a.JSONL.flush.Now()
	if a.o.Direct {
		// Every page was handed over before the crawl finished: what is
		// left is the last sync.
		for !a.WARC.direct.drained() || !a.JSONL.direct.drained() {
			select {
			case <-a.stopped:
				return nil
			case <-ctx.Done():
				return nil
			case <-time.After(drainPoll):
			}
		}
		return nil
	}
	for {
		n, err := Pending(ctx, a.o.JS, a.o.Names)
		if err != nil {
			if ctx.Err() != nil { // an interrupt is not a failure: the rest is written next time
				return nil
			}
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-a.stopped: // a sink failed: nothing will drain; Run says why
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(drainPoll):
		}
	}
}

// Direct reports whether the archive is handed its pages and documents.
func (a *Archive) Direct() bool { return a.o.Direct }

// HandPage archives a page (a pages.fetched message) in process: Direct
// only, between Prepare and the end of Run. An error means it is not
// archived: the page must be done again.
func (a *Archive) HandPage(m jetstream.Msg) error { return a.WARC.Hand(m) }

// HandDoc writes a parsed document's line in process, as HandPage.
func (a *Archive) HandDoc(doc []byte) error { return a.JSONL.Hand(doc) }

// Pending counts the messages both sinks have yet to write or acknowledge
// (bus.Backlog: a page is counted from its publish's ack).
func Pending(ctx context.Context, js jetstream.JetStream, names subjects.Names) (uint64, error) {
	var n uint64
	for stream, name := range map[string]string{names.StreamPages(): ConsumerWARC, names.StreamParsed(): ConsumerJSONL} {
		c, err := js.Consumer(ctx, stream, name)
		if err != nil {
			return 0, fmt.Errorf("archive consumer %s: %w", name, err)
		}
		backlog, err := bus.Backlog(ctx, js, c)
		if err != nil {
			return 0, fmt.Errorf("archive: %w", err)
		}
		n += backlog
	}
	return n, nil
}
