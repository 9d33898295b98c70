package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Options configure both sinks of an archive directory.
type Options struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	Dir        string
	MaxSize    int64
	MaxAge     time.Duration
	UserAgent  string
	MaxDeliver int
	Log        *slog.Logger
	Registerer prometheus.Registerer
}

// Archive runs a WARC sink and a JSON Lines sink over one directory: what
// `trawler archive` and `trawler run --archive` start.
type Archive struct {
	WARC  *WARCSink
	JSONL *JSONLSink
	js    jetstream.JetStream
	names subjects.Names

	cancel context.CancelFunc
	done   chan error
}

// Start creates both consumers (so no page published from now on is missed),
// then runs both sinks until ctx ends or Finish.
func Start(ctx context.Context, o Options) (*Archive, error) {
	if o.Dir == "" {
		return nil, errors.New("archive: no directory")
	}
	if _, err := EnsureWARC(ctx, o.JS, o.Names); err != nil {
		return nil, err
	}
	if _, err := EnsureJSONL(ctx, o.JS, o.Names); err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Archive{
		WARC: NewWARC(WARCOptions{JS: o.JS, Names: o.Names, Dir: o.Dir, MaxSize: o.MaxSize, MaxAge: o.MaxAge,
			UserAgent: o.UserAgent, MaxDeliver: o.MaxDeliver, Log: log.With("sink", "warc"), Registerer: o.Registerer}),
		JSONL: NewJSONL(JSONLOptions{JS: o.JS, Names: o.Names, Dir: o.Dir, MaxSize: o.MaxSize, MaxAge: o.MaxAge,
			MaxDeliver: o.MaxDeliver, Log: log.With("sink", "jsonl"), Registerer: o.Registerer}),
		js: o.JS, names: o.Names, done: make(chan error, 2),
	}
	runCtx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	go func() { a.done <- a.WARC.Run(runCtx) }()
	go func() { a.done <- a.JSONL.Run(runCtx) }()
	return a, nil
}

// Run waits until ctx (given to Start) ends and both sinks have stopped.
func (a *Archive) Run(ctx context.Context) error {
	<-ctx.Done()
	return a.Finish(ctx, false)
}

// Finish stops the sinks, after waiting, when drain is set, until both have
// written everything their streams hold for them (or ctx ends). The sinks
// complete their open files before it returns.
func (a *Archive) Finish(ctx context.Context, drain bool) error {
	var errs []error
	for drain {
		n, err := Pending(ctx, a.js, a.names)
		if err != nil {
			if ctx.Err() == nil { // an interrupt is not a failure: the rest is written next time
				errs = append(errs, err)
			}
			break
		}
		if n == 0 || ctx.Err() != nil {
			break
		}
		select {
		case err := <-a.done: // a sink failed: nothing will drain
			a.done <- err
			drain = false
		case <-time.After(20 * time.Millisecond):
		}
	}
	a.cancel()
	for range 2 {
		if err := <-a.done; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Pending counts the messages both sinks have yet to write or acknowledge.
func Pending(ctx context.Context, js jetstream.JetStream, names subjects.Names) (uint64, error) {
	var n uint64
	for stream, name := range map[string]string{names.StreamPages(): ConsumerWARC, names.StreamParsed(): ConsumerJSONL} {
		c, err := js.Consumer(ctx, stream, name)
		if err != nil {
			return 0, fmt.Errorf("archive consumer %s: %w", name, err)
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("archive consumer %s: %w", name, err)
		}
		n += ci.NumPending + uint64(ci.NumAckPending)
	}
	return n, nil
}
