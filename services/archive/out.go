package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// ConsumerOut is the durable consumer of `trawler run --out`.
const ConsumerOut = "out"

// maxKeptLineBuf bounds the buffer the writer keeps between parts: a part
// of many large documents is written from a buffer of its own, left to the
// collector.
const maxKeptLineBuf = 1 << 20

// Defaults of OutOptions.
const (
	DefaultOutEvery    = time.Second
	DefaultOutMaxBatch = 1024
	// DefaultOutAckWait is short because the writer is the consumer's only
	// reader: what waits for it is a batch a crash left unacknowledged,
	// and the end of the next run waits for that batch. A redelivery while
	// the batch is still being written is harmless: the checkpoint skips it.
	DefaultOutAckWait = 5 * time.Second
)

// OutOptions configure the --out file of `trawler run`.
type OutOptions struct {
	JS    jetstream.JetStream
	Names subjects.Names
	Path  string // the output file; its checkpoint is Path + ".checkpoint"
	// Every is the longest a parsed page waits for the rest of its batch
	// (DefaultOutEvery); a batch also ends at MaxBatch messages
	// (DefaultOutMaxBatch). Each batch costs three fsyncs: the lines, the
	// checkpoint and its directory. The file is a tap: nothing in the crawl
	// waits for it, except the end of a run for its last batch.
	Every    time.Duration
	MaxBatch int
	// AckWait is the consumer's: how long a batch lost in a crash waits
	// before JetStream delivers it again (DefaultOutAckWait).
	AckWait    time.Duration
	Log        *slog.Logger
	Registerer prometheus.Registerer // trawler_out_lines_total, trawler_out_checkpoints_total
	// Direct: the parser hands every document to Write, in process, and
	// the writer has no consumer on pages.parsed (outdirect.go). For a
	// crawl whose pages.parsed nobody else can read (`trawler run`
	// without --nats-listen): its documents then need not be stored there.
	Direct bool
}

// Out is a tap on pages.parsed that appends one JSON line (messages.Parsed,
// as messages.AppendParsedLine writes it: the archive's JSON Lines line) per
// fetched URL to a file, effectively once. It makes lines durable by the
// batch: the lines of up to Every (or MaxBatch messages), written as they
// come, one fsync at the batch's end, then a checkpoint beside the output
// recording the file's size and which stream sequences it holds, then the
// acks. On start it cuts the file back to the checkpointed
// size, dropping a batch a crash cut short (written but not checkpointed, so
// not acknowledged either: JetStream delivers it again), and it skips the
// messages the checkpoint holds (checkpointed, but their acks were lost).
// A file without a checkpoint gets one, of its size, before the first line.
//
// The checkpoint names the sequences, not a high-water mark: a batch lost in
// a crash comes back only after its ack wait, when the next run has written
// newer pages, so "at or below the last sequence written" would drop it.
//
// Out follows the services' contract: NewOut wires and starts nothing,
// Prepare (before the crawl's services start, so that its consumer sees
// every document) opens the file, applies its checkpoint and creates the
// consumer, Run writes until its ctx ends and closes the file, and Drain, at
// a finished crawl's end, waits until every parsed document is written.
type Out struct {
	o    OutOptions
	f    *os.File
	ckpt string
	pos  outCheckpoint
	cons jetstream.Consumer
	// stopped is closed when Run returns.
	stopped chan struct{}
	flush   *flushSignal // Drain: the crawl has finished, write batches at once
	buf     []byte       // the lines of a part, before they are written (append)
	direct  directState  // OutOptions.Direct

	Lines       atomic.Int64 // lines written
	Checkpoints atomic.Int64 // batches made durable

	// crash, when set, runs between a batch's synced lines and its
	// checkpoint; an error stops the writer there, as a crash would.
	crash func() error
}

// outCheckpoint is the --out file's checkpoint: its size and the stream
// sequences written, as Seq (every message at or below it is handled: the
// consumer's ack floor, which passes a message only after its checkpoint)
// and Above (the sequences written above Seq, ascending).
type outCheckpoint struct {
	Seq   uint64   `json:"seq"`
	Size  int64    `json:"size"`
	Above []uint64 `json:"above,omitempty"`
	// Direct: written by a direct writer (OutOptions.Direct), whose lines
	// past Size are kept on start (complete ones: their pages may be done).
	// Recent names the tasks whose lines the next start must not write
	// again: those of a direct writer's last two batches, or those a start
	// after a direct writer's found.
	Direct bool     `json:"direct,omitempty"`
	Recent []string `json:"recent,omitempty"`
}

// has reports whether sequence seq is in the file already.
func (c *outCheckpoint) has(seq uint64) bool {
	if seq <= c.Seq {
		return true
	}
	_, found := slices.BinarySearch(c.Above, seq)
	return found
}

// raise moves Seq up to floor and forgets the sequences it passes.
func (c *outCheckpoint) raise(floor uint64) {
	if floor <= c.Seq {
		return
	}
	c.Seq = floor
	i, _ := slices.BinarySearch(c.Above, floor+1)
	c.Above = slices.Delete(c.Above, 0, i)
}

// NewOut builds the --out writer; nothing is opened or started until
// Prepare or Run. Its counters are registered on o.Registerer.
func NewOut(o OutOptions) *Out {
	if o.Every <= 0 {
		o.Every = DefaultOutEvery
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultOutMaxBatch
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultOutAckWait
	}
	w := &Out{o: o, ckpt: o.Path + ".checkpoint", stopped: make(chan struct{}), flush: newFlushSignal()}
	w.direct.seen = map[string]struct{}{}
	w.direct.wrote = make(chan struct{}, 1)
	w.direct.committed = make(chan struct{}, 1)
	bus.RegisterCounters(o.Registerer, "out",
		bus.Counter{Name: "lines_total", Help: "Lines written to the --out file.", Value: &w.Lines},
		bus.Counter{Name: "checkpoints_total", Help: "Batches of the --out file made durable (fsync and checkpoint).", Value: &w.Checkpoints},
	)
	return w
}

// Direct reports whether the writer is handed its documents (Write).
func (w *Out) Direct() bool { return w.o.Direct }

// Prepare opens (or resumes) the output file, cutting it back to its
// checkpoint, and creates the writer's durable consumer: from then on no
// parsed document is missed. Run calls it when it was not called; a
// prepared Out holds its file until Run returns.
func (w *Out) Prepare(ctx context.Context) error {
	if w.f != nil {
		return nil
	}
	f, err := os.OpenFile(w.o.Path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	w.f = f
	if err := w.recover(); err != nil {
		f.Close()
		w.f = nil
		return err
	}
	if w.o.Direct {
		return nil
	}
	w.cons, err = w.o.JS.CreateOrUpdateConsumer(ctx, w.o.Names.StreamParsed(), jetstream.ConsumerConfig{
		Durable: ConsumerOut, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4 * w.o.MaxBatch, AckWait: w.o.AckWait,
		FilterSubject: w.o.Names.PagesParsed(),
	})
	if err != nil {
		f.Close()
		w.f = nil
		return fmt.Errorf("--out consumer: %w", err)
	}
	return nil
}

// Run prepares the writer if Prepare was not called, then writes batches
// until ctx ends (the batch in hand is written first) or a write fails,
// and closes the file. Run once.
func (w *Out) Run(ctx context.Context) error {
	defer close(w.stopped)
	if err := w.Prepare(ctx); err != nil {
		return err
	}
	var err error
	if w.o.Direct {
		err = w.runDirect(ctx)
	} else {
		err = w.loop(ctx)
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Drain waits until every parsed document the stream holds for the writer
// is written and acknowledged (a direct writer: every line written is
// checkpointed), or ctx ends (the rest is written by the next
// run), or Run has returned. Call it after Prepare, while Run runs, once
// the crawl has finished, then end Run's ctx.
func (w *Out) Drain(ctx context.Context) error {
	var left func() bool
	switch {
	case w.o.Direct && w.f != nil:
		// Every document was handed over before the crawl finished: the
		// batch in hand is committed at once.
		left = func() bool { return w.direct.pending.Load() > 0 }
	case w.cons == nil:
		return errors.New("--out: Drain before Prepare")
	default:
		left = func() bool {
			n, err := bus.Backlog(ctx, w.o.JS, w.cons)
			return err == nil && n > 0
		}
	}
	w.flush.Now() // nothing more is coming: write each batch as it comes
	select {
	case w.direct.wrote <- struct{}{}: // wake a direct writer's Run
	default:
	}
	for left() {
		select {
		case <-w.stopped: // stopped on an error: Run says which
			return nil
		case <-ctx.Done():
			return nil
		case <-w.direct.committed: // a direct writer's checkpoint
		case <-time.After(drainPoll):
		}
	}
	return nil
}

// recover reads the checkpoint and cuts off what was written after it.
func (w *Out) recover() error {
	removeStaleTemps(w.ckpt)
	fi, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	data, err := os.ReadFile(w.ckpt)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A new file, or one of the user's: append to it. Its size is
		// checkpointed before any line is written, or a crash within the
		// first batch would leave lines that the next start takes for the
		// user's and keeps, and the batch would be written twice.
		w.pos = outCheckpoint{Size: fi.Size(), Direct: w.o.Direct}
		data, _ := json.Marshal(w.pos)
		if err := replaceFile(w.ckpt, data); err != nil {
			return fmt.Errorf("--out checkpoint: %w", err)
		}
	case err != nil:
		return fmt.Errorf("--out checkpoint: %w", err)
	default:
		if err := json.Unmarshal(data, &w.pos); err != nil {
			return fmt.Errorf("--out checkpoint %s: %w (delete it to start the file afresh)", w.ckpt, err)
		}
	}
	if fi.Size() < w.pos.Size {
		return fmt.Errorf("--out: %s is shorter (%d bytes) than its checkpoint says (%d); was it edited? delete %s to start afresh",
			w.f.Name(), fi.Size(), w.pos.Size, w.ckpt)
	}
	if w.pos.Direct {
		return w.recoverDirect(fi.Size())
	}
	w.skipTasks(w.pos.Recent)
	if cut := fi.Size() - w.pos.Size; cut > 0 && w.o.Log != nil {
		w.o.Log.Info("--out: dropped the lines of a batch written but not checkpointed; they are written again",
			"file", w.f.Name(), "bytes", cut)
	}
	if err := w.f.Truncate(w.pos.Size); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if _, err = w.f.Seek(w.pos.Size, io.SeekStart); err != nil || !w.o.Direct {
		return err
	}
	// A direct writer keeps the lines past its checkpoint: its checkpoint
	// must say so before the first of them.
	w.pos = outCheckpoint{Size: w.pos.Size, Direct: true, Recent: w.pos.Recent}
	data, _ = json.Marshal(w.pos)
	if err := replaceFile(w.ckpt, data); err != nil {
		return fmt.Errorf("--out checkpoint: %w", err)
	}
	return nil
}

func (w *Out) loop(ctx context.Context) error {
	msgs, err := bus.PullBatches(ctx, w.cons, w.o.MaxBatch)
	if err != nil {
		return starting(ctx, err)
	}
	for {
		var b outBatch
		batch, err := gatherEach(ctx, msgs, w.o.MaxBatch, w.o.Every, w.flush, func(part []jetstream.Msg) error {
			return w.append(&b, part)
		})
		if err != nil {
			return err
		}
		if batch == nil {
			return nil
		}
		if err := w.commit(&b); err != nil {
			return err
		}
		for _, m := range batch {
			_ = m.Ack()
		}
	}
}

// outBatch is a batch's lines written since the checkpoint.
type outBatch struct {
	seqs  []uint64 // their stream sequences, as they came
	size  int64    // their bytes
	lines int
}

// append writes the lines of part, a part of a batch, as it arrives: the
// batch's end then costs its sync and checkpoint only, not the copy of a
// second of pages (a crawl's last batch is written while its end waits).
// Lines past the checkpoint are what a crash leaves for recover to cut.
func (w *Out) append(b *outBatch, part []jetstream.Msg) error {
	// One buffer for the writer's life: a part is mostly one page, and a
	// new buffer for each was a fifteenth of the all-in-one's allocations.
	buf := w.buf[:0]
	for _, m := range part {
		md, err := m.Metadata()
		if err != nil || w.pos.has(md.Sequence.Stream) || slices.Contains(b.seqs, md.Sequence.Stream) {
			continue // written before
		}
		if len(w.direct.skip) > 0 {
			// Written by a direct writer before a crash.
			if _, ok := w.direct.skip[strings.TrimPrefix(m.Headers().Get(nats.MsgIdHdr), "parsed:")]; ok {
				continue
			}
		}
		b.seqs = append(b.seqs, md.Sequence.Stream)
		// The line is the archive's JSON Lines line (one writer of both:
		// messages.AppendParsedLine, which copies the parser's document
		// rather than decode and encode it again). What cannot be a line
		// (not one JSON object) is skipped: nothing to gain by retrying.
		if buf, err = messages.AppendParsedLine(buf, m.Data()); err != nil {
			continue
		}
		b.lines++
	}
	if cap(buf) <= maxKeptLineBuf {
		w.buf = buf
	}
	if len(buf) == 0 {
		return nil
	}
	if _, err := w.f.Write(buf); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	b.size += int64(len(buf))
	return nil
}

// commit makes a batch's lines durable: sync, then the checkpoint.
func (w *Out) commit(b *outBatch) error {
	if len(b.seqs) == 0 {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if w.crash != nil {
		if err := w.crash(); err != nil {
			return err
		}
	}
	next := outCheckpoint{Seq: w.pos.Seq, Size: w.pos.Size + b.size, Recent: w.pos.Recent}
	next.Above = append(slices.Clone(w.pos.Above), b.seqs...)
	slices.Sort(next.Above)
	if ci, err := w.cons.Info(context.Background()); err == nil {
		next.raise(ci.AckFloor.Stream) // acked: checkpointed earlier
	}
	data, _ := json.Marshal(next)
	if err := replaceFile(w.ckpt, data); err != nil {
		return fmt.Errorf("--out checkpoint: %w", err)
	}
	w.pos = next
	w.Lines.Add(int64(b.lines))
	w.Checkpoints.Add(1)
	return nil
}

// recoverDirect is recover after a direct writer's checkpoint: the complete
// lines past it stay and their tasks are skipped from now on, and a new
// checkpoint, of this writer's kind, takes them in.
func (w *Out) recoverDirect(size int64) error {
	if size == w.pos.Size && w.o.Direct && w.pos.Seq == 0 && len(w.pos.Above) == 0 {
		// Nothing past a direct writer's checkpoint (a new file's, say):
		// it says what it would be rewritten to say, and the file needs no
		// sync. A start skips the sync and the rewrite (three fsyncs).
		if _, err := w.f.Seek(w.pos.Size, io.SeekStart); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		w.skipTasks(w.pos.Recent)
		return nil
	}
	ids, err := w.keepWrittenLines(size)
	if err != nil {
		return err
	}
	if _, err := w.f.Seek(w.pos.Size, io.SeekStart); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	recent := append(slices.Clone(w.pos.Recent), ids...)
	w.skipTasks(recent)
	// A stream's writer starts from no sequence: none was written to the
	// file by the direct one.
	w.pos = outCheckpoint{Size: w.pos.Size, Direct: w.o.Direct, Recent: recent}
	data, _ := json.Marshal(w.pos)
	if err := replaceFile(w.ckpt, data); err != nil {
		return fmt.Errorf("--out checkpoint: %w", err)
	}
	return nil
}

// skipTasks adds tasks to those whose documents are not written again.
func (w *Out) skipTasks(tasks []string) {
	if len(tasks) == 0 {
		return
	}
	if w.direct.skip == nil {
		w.direct.skip = make(map[string]struct{}, len(tasks))
	}
	for _, t := range tasks {
		w.direct.skip[t] = struct{}{}
	}
}

// replaceFile durably replaces path with data: a new temporary file beside
// it (os.CreateTemp: O_EXCL, a random name, so nothing planted there, such as
// a symlink, is followed), synced, renamed over path, then the directory
// synced so the rename itself survives a power loss.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o644)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// removeStaleTemps deletes the temporary files replaceFile(path) left when
// the process died between creating one and renaming it.
func removeStaleTemps(path string) {
	dir, base := filepath.Dir(path), filepath.Base(path)+"."
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if len(name) > len(base)+len(".tmp") && name[:len(base)] == base && filepath.Ext(name) == ".tmp" &&
			allDigits(name[len(base):len(name)-len(".tmp")]) {
			os.Remove(filepath.Join(dir, name)) // a symlink is removed, not followed
		}
	}
}

// allDigits reports whether s is os.CreateTemp's random part.
func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// drainPoll is how often Drain looks at what its consumers still hold: a
// run's exit waits for it (a consumer info request per look).
const drainPoll = 5 * time.Millisecond
