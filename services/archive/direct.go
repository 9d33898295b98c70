package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// directSink feeds a sink's writer in process: `trawler run --archive`
// when nothing but the crawl's own process can read its streams (no
// --nats-listen), so that pages and documents need not be stored on
// pages.fetched and pages.parsed for the archive. The parser hands each
// page (and document) over before the page is reported done; the records
// are written at once, synced every syncEvery, and at the end. The
// guarantees are the consumer's sink's: at least once (a page done again
// after a crash is written again), and a crash keeps what was written (the
// complete records of an .open file are recovered at the next start).
type directSink struct {
	w     writer
	stats *Stats
	log   *slog.Logger
	kick  chan struct{} // a sync now (Drain)

	mu      sync.Mutex
	pending int   // messages written since the last sync
	err     error // a failed write or sync: the sink stops
}

func newDirectSink(w writer, stats *Stats, log *slog.Logger) *directSink {
	return &directSink{w: w, stats: stats, log: log, kick: make(chan struct{}, 1)}
}

// hand writes m's records. An error means they are not written (the page
// must be done again); a message that cannot be archived is counted,
// logged and skipped, as the consumer's sink dead-letters it.
func (d *directSink) hand(m jetstream.Msg) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	bad, err := d.w.write([]jetstream.Msg{m})
	if err != nil {
		d.err = fmt.Errorf("archive: %w", err)
		d.wake()
		return d.err
	}
	if why, ok := bad[m]; ok {
		d.stats.Parked.Add(1)
		d.log.Warn("not archivable; skipped", "err", why)
		return nil
	}
	d.stats.Messages.Add(1)
	d.pending++
	return nil
}

func (d *directSink) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// run syncs every syncEvery (and when kicked), completes files as they
// are due, and syncs and closes the writer when ctx ends or a write fails.
func (d *directSink) run(ctx context.Context) error {
	tick := time.NewTicker(syncEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			err := d.sync()
			d.mu.Lock()
			defer d.mu.Unlock()
			return errors.Join(err, d.w.close())
		case <-d.kick:
		case <-tick.C:
			d.mu.Lock()
			err := d.w.rotateIfDue()
			d.mu.Unlock()
			if err != nil {
				d.log.Error("completing a file", "err", err)
			}
		}
		if err := d.sync(); err != nil {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.w.close()
			return err
		}
	}
}

// sync makes what was written durable.
func (d *directSink) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	if d.pending == 0 {
		return nil
	}
	if err := d.w.sync(); err != nil {
		d.err = fmt.Errorf("archive: %w", err)
		return d.err
	}
	d.pending = 0
	return nil
}

// drained reports whether everything written is synced (asking for a sync
// when not).
func (d *directSink) drained() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending > 0 && d.err == nil {
		d.wake()
		return false
	}
	return true
}
