// Package archive holds the two sinks that keep what a crawl fetched: a WARC
// archive of pages.fetched (WARCSink) and a JSON Lines file of pages.parsed
// (JSONLSink). Each is an ordinary service: it reads through a durable
// consumer of its own, so it never slows the crawl, and several replicas
// share that consumer to scale out. A message is acknowledged only once its
// record is written and synced to disk; a crash before that redelivers it
// (at-least-once: a record can appear twice, never zero times).
//
// Backpressure: PAGES is an interest-retention stream. While the WARC
// consumer exists, every page stays on the NATS server until the archive has
// written it, however far behind the archive is: a slow or stopped archive
// costs the NATS server disk, not the crawl speed. Delete the consumer
// (DeleteConsumers, `trawler archive --remove`) when you stop archiving a
// crawl for good. PARSED has limits retention (7 days, 1 GiB): a JSON Lines
// sink that falls further behind than that loses the oldest documents.
package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Durable consumer names of the sinks.
const (
	ConsumerWARC  = "archive-warc"
	ConsumerJSONL = "archive-jsonl"
)

// Stats are a sink's running totals.
type Stats struct {
	Messages atomic.Int64 // messages written and acknowledged
	Records  atomic.Int64 // records (WARC) or lines (JSON Lines) written
	Bytes    atomic.Int64 // payload bytes archived
	Parked   atomic.Int64 // messages dead-lettered as unarchivable
}

// EnsureWARC creates (or updates) the WARC sink's durable consumer on PAGES.
// Create it before the crawl starts to archive every page: pages published
// while no consumer but the parser's exists are gone once parsed.
func EnsureWARC(ctx context.Context, js jetstream.JetStream, names subjects.Names) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, names.StreamPages(), consumerConfig(ConsumerWARC, names.PagesFetched()))
	if err != nil {
		return nil, fmt.Errorf("archive consumer %s: %w", ConsumerWARC, err)
	}
	return c, nil
}

// EnsureJSONL creates (or updates) the JSON Lines sink's durable consumer on
// PARSED; created later than the crawl, it starts with what PARSED still holds.
func EnsureJSONL(ctx context.Context, js jetstream.JetStream, names subjects.Names) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, names.StreamParsed(), consumerConfig(ConsumerJSONL, names.PagesParsed()))
	if err != nil {
		return nil, fmt.Errorf("archive consumer %s: %w", ConsumerJSONL, err)
	}
	return c, nil
}

// DeleteConsumers removes both sinks' consumers, so PAGES stops keeping pages
// for an archive that will not come back.
func DeleteConsumers(ctx context.Context, js jetstream.JetStream, names subjects.Names) error {
	var errs []error
	for stream, name := range map[string]string{names.StreamPages(): ConsumerWARC, names.StreamParsed(): ConsumerJSONL} {
		if err := js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			errs = append(errs, fmt.Errorf("delete consumer %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func consumerConfig(name, subject string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable: name, FilterSubject: subject, Description: "Trawler archive sink",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: -1,
		MaxAckPending: 2 * batchMax,
	}
}

// batchMax bounds the messages written between two syncs.
const batchMax = 512

// syncEvery is the longest a message waits for the rest of its batch: a
// sink syncs its file (and acknowledges) once per batch, so under a steady
// flow of pages it syncs about once a second instead of once per page or
// two. Nothing in the crawl waits for a sink. A variable for tests.
var syncEvery = time.Second

// gather waits for a first message, then collects more until max messages
// or linger after the first, or until in closes or ctx ends; nil when ctx
// ended or in closed before a first message.
func gather(ctx context.Context, in <-chan jetstream.Msg, max int, linger time.Duration, flush *flushSignal) []jetstream.Msg {
	batch, _ := gatherEach(ctx, in, max, linger, flush, nil)
	return batch
}

// gatherEach is gather that hands each part of the batch to each as it
// arrives (nil: none), so a writer can write while the batch gathers and
// leave only its sync for the batch's end. An error from each ends the
// batch: gatherEach returns what it gathered with the error.
func gatherEach(ctx context.Context, in <-chan jetstream.Msg, max int, linger time.Duration, flush *flushSignal, each func([]jetstream.Msg) error) ([]jetstream.Msg, error) {
	batch := bus.Batch(ctx, in, max)
	if batch == nil {
		return nil, nil
	}
	if each != nil {
		if err := each(batch); err != nil {
			return batch, err
		}
	}
	if len(batch) >= max || linger <= 0 || flush.closed() {
		return batch, nil
	}
	t := time.NewTimer(linger)
	defer t.Stop()
	for len(batch) < max {
		select {
		case m, ok := <-in:
			if !ok {
				return batch, nil
			}
			n := len(batch)
			batch = bus.Drain(in, append(batch, m), max)
			if each != nil {
				if err := each(batch[n:]); err != nil {
					return batch, err
				}
			}
		case <-t.C:
			return batch, nil
		case <-flush.C():
			return batch, nil
		case <-ctx.Done():
			return batch, nil
		}
	}
	return batch, nil
}

// flushSignal ends the lingering of a sink's batches for good: Now is
// called once a finished crawl's end is reached (Drain), and from then on
// gather hands over each batch as soon as it is pulled. Without it, the end
// of every `trawler run` with --out or --archive waited up to a batch's
// linger (a second) for pages that would never come.
type flushSignal struct {
	once sync.Once
	ch   chan struct{}
}

func newFlushSignal() *flushSignal { return &flushSignal{ch: make(chan struct{})} }

// Now ends the lingering; safe to call more than once.
func (f *flushSignal) Now() { f.once.Do(func() { close(f.ch) }) }

// C is closed by Now.
func (f *flushSignal) C() <-chan struct{} { return f.ch }

func (f *flushSignal) closed() bool {
	select {
	case <-f.ch:
		return true
	default:
		return false
	}
}

// writer is what a sink loop drives: write a batch (returning the messages
// that cannot be archived, with why), make it durable, rotate, finish.
type writer interface {
	write(batch []jetstream.Msg) (bad map[jetstream.Msg]error, err error)
	sync() error
	rotateIfDue() error
	close() error
}

// run pulls from c and hands batches to w until ctx ends, then closes w.
// A batch is written as its messages come (gatherEach), so its end costs
// only the sync: the last batch of a crawl, a second of pages to compress,
// used to be written while the run's exit waited for it.
func run(ctx context.Context, c jetstream.Consumer, w writer, flush *flushSignal, dlq bus.DeadLetters, stats *Stats, log *slog.Logger) error {
	msgs, err := bus.PullBatches(ctx, c, batchMax)
	if err != nil {
		return starting(ctx, err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var mu sync.Mutex // w: written as batches gather, synced and rotated here
	batches := make(chan gathered)
	go func() {
		defer close(batches)
		for {
			var g gathered
			g.batch, g.err = gatherEach(ctx, msgs, batchMax, syncEvery, flush, func(part []jetstream.Msg) error {
				mu.Lock()
				defer mu.Unlock()
				bad, err := w.write(part)
				for m, why := range bad {
					if g.bad == nil {
						g.bad = map[jetstream.Msg]error{}
					}
					g.bad[m] = why
				}
				return err
			})
			if g.batch == nil {
				return
			}
			batches <- g
		}
	}()
	work := context.WithoutCancel(ctx)
	for {
		select {
		case g, ok := <-batches:
			if !ok {
				mu.Lock()
				defer mu.Unlock()
				return w.close()
			}
			if err := handle(work, ctx, g, w, &mu, dlq, stats, log); err != nil {
				mu.Lock()
				defer mu.Unlock()
				w.close()
				return err
			}
		case <-tick.C:
			mu.Lock()
			err := w.rotateIfDue()
			mu.Unlock()
			if err != nil {
				log.Error("completing a file", "err", err)
			}
		}
	}
}

// gathered is a batch as gatherEach wrote it: the messages that cannot be
// archived (bad), and err when a part's write failed, after which the batch
// is written again whole (a record may then be in the archive twice, as
// after a crash: at least once).
type gathered struct {
	batch []jetstream.Msg
	bad   map[jetstream.Msg]error
	err   error
}

// starting is the error of a step that starts a sink: none when ctx ended
// meanwhile (a sink stopped as it started has nothing to report; the
// client's error for a canceled request is not always context.Canceled).
func starting(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// handle makes one batch durable and acknowledges it: a sync, or, when a
// part's write failed, the whole batch written again and synced; failures
// are retried (the messages held meanwhile) until ctx ends.
func handle(work, ctx context.Context, g gathered, w writer, mu *sync.Mutex, dlq bus.DeadLetters, stats *Stats, log *slog.Logger) error {
	bad := g.bad
	err := bus.Retry(ctx, "archive write", log.Warn, func() {
		for _, m := range g.batch {
			_ = m.InProgress()
		}
	}, func() error {
		mu.Lock()
		defer mu.Unlock()
		if g.err != nil {
			var err error
			if bad, err = w.write(g.batch); err != nil {
				return err
			}
			g.err = nil // written: only the sync is left to retry
		}
		return w.sync()
	})
	if err != nil {
		return nil // stopping: the batch is redelivered to the next replica
	}
	for _, m := range g.batch {
		if why, ok := bad[m]; ok {
			stats.Parked.Add(1)
			dlq.ParkOrLog(work, m, why.Error(), log)
			continue
		}
		stats.Messages.Add(1)
		_ = m.Ack()
	}
	return nil
}
