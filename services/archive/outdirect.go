package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// The direct writer (OutOptions.Direct): the parser hands each document to
// Write in process, and nothing is stored on pages.parsed for the file. A
// document's line is written (into the kernel's page cache) before Write
// returns, so before the page is reported done: a crash after that keeps
// the line, and the recovery keeps every complete line past the checkpoint
// rather than cutting them off. A page done again after a crash (its done
// report lost with the process) must not get a second line: the checkpoint
// names the task IDs of the last two batches (Recent), and the recovery adds
// those of the lines past it; Write skips them, and the task IDs of the
// batches in hand, as the stream's message IDs did.

// directBatch is what Write has written since the last checkpoint.
type directBatch struct {
	size  int64
	lines int
	tasks []string
}

// directState is the direct writer's: the batch in hand and the task IDs
// it must not write again. mu orders Write's appends and the batch's hand
// over to the commit.
type directState struct {
	mu       sync.Mutex
	batch    directBatch
	lastTask []string            // the task IDs of the batch committed last
	seen     map[string]struct{} // those of the batch in hand and the last one
	skip     map[string]struct{} // those the recovery found
	err      error               // a failed write: the writer stops
	buf      []byte
	wrote    chan struct{} // a line was written (capacity 1)
	pending  atomic.Int64  // lines written, not yet checkpointed
	// committed is signalled after each checkpoint (capacity 1): Drain
	// waits for it rather than polling.
	committed chan struct{}
	// behind is the offset up to which the file's writeback was started
	// (writeBehind); runDirect's alone.
	behind int64
}

// Write appends the line of a parsed document (the parser's JSON, as
// messages.AppendParsedLine makes it) for task taskID, unless a line of
// that task is in the file already. It returns once the line is written,
// not synced: the batch's commit syncs it. Safe for concurrent use; call it
// between Prepare and the end of Run. An error means the line is not
// written: the page must be done again.
func (w *Out) Write(taskID string, doc []byte) error {
	d := &w.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	if w.f == nil || !w.o.Direct {
		return errors.New("--out: Write on a writer not prepared to be handed documents")
	}
	if _, ok := d.seen[taskID]; ok {
		return nil
	}
	if _, ok := d.skip[taskID]; ok {
		return nil
	}
	buf, err := messages.AppendParsedLine(d.buf[:0], doc)
	if err != nil {
		return nil // not one JSON object: skipped, as the stream's writer does
	}
	if cap(buf) <= maxKeptLineBuf {
		d.buf = buf
	}
	if _, err := w.f.Write(buf); err != nil {
		// A short write leaves part of a line: the next run's recovery
		// cuts it (it keeps complete lines only).
		d.err = fmt.Errorf("--out: %w", err)
		select { // Run stops on it
		case d.wrote <- struct{}{}:
		default:
		}
		return d.err
	}
	d.batch.size += int64(len(buf))
	d.batch.lines++
	d.batch.tasks = append(d.batch.tasks, taskID)
	d.seen[taskID] = struct{}{}
	d.pending.Add(1)
	select {
	case d.wrote <- struct{}{}:
	default:
	}
	return nil
}

// runDirect commits the lines Write gathers: Every after a batch's first
// line, at MaxBatch lines, at once when the crawl has finished (Drain), and
// at the end of ctx.
func (w *Out) runDirect(ctx context.Context) error {
	d := &w.direct
	d.behind = w.pos.Size
	for {
		select {
		case <-ctx.Done():
			return w.commitDirect()
		case <-d.wrote:
		}
		deadline := time.NewTimer(w.o.Every)
	gather:
		for !w.directFull() {
			w.writeBehind()
			select {
			case <-ctx.Done():
				break gather
			case <-deadline.C:
				break gather
			case <-w.flush.C():
				break gather
			case <-d.wrote:
			}
		}
		deadline.Stop()
		if err := w.commitDirect(); err != nil {
			return err
		}
	}
}

// writeBehind starts the disk's writeback of the lines written since it
// last did, by whole pages once writeBehindChunk has gathered, and does not
// wait for it: the batch's fsync then finds most of its bytes on disk. A
// crawl of a second was one batch of ~13 MB, whose fsync held the end of
// the run ~20 ms. Called by runDirect alone, between commits (w.pos is
// the file's committed size).
func (w *Out) writeBehind() {
	d := &w.direct
	d.mu.Lock()
	end := w.pos.Size + d.batch.size
	d.mu.Unlock()
	if end-d.behind < writeBehindChunk {
		return
	}
	to := end &^ (writeBehindPage - 1) // a page still being filled is left for later
	startWriteback(w.f, d.behind, to-d.behind)
	d.behind = to
}

// writeBehindChunk is how much writeBehind lets gather before it starts a
// writeback; writeBehindPage the page size it rounds down to.
const (
	writeBehindChunk = 1 << 20
	writeBehindPage  = 4096
)

func (w *Out) directFull() bool {
	d := &w.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.batch.lines >= w.o.MaxBatch || d.err != nil
}

// commitDirect makes the batch in hand durable: sync, then the checkpoint
// (the file's size and the task IDs of this batch and the one before).
// Lines written while it syncs belong to the next batch.
func (w *Out) commitDirect() error {
	d := &w.direct
	d.mu.Lock()
	b, err := d.batch, d.err
	d.batch = directBatch{}
	last := d.lastTask
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if b.lines == 0 {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return w.failDirect(fmt.Errorf("--out: %w", err))
	}
	if w.crash != nil {
		if err := w.crash(); err != nil {
			return w.failDirect(err)
		}
	}
	next := outCheckpoint{Direct: true, Size: w.pos.Size + b.size, Recent: append(append([]string(nil), last...), b.tasks...)}
	data, _ := json.Marshal(next)
	if err := replaceFile(w.ckpt, data); err != nil {
		return w.failDirect(fmt.Errorf("--out checkpoint: %w", err))
	}
	w.pos = next
	d.mu.Lock()
	// This batch and the one in hand are what a redelivery may repeat now
	// (Write adds no task twice, so the last batch's are in neither).
	for _, t := range last {
		delete(d.seen, t)
	}
	d.lastTask = b.tasks
	d.mu.Unlock()
	d.pending.Add(-int64(b.lines))
	w.Lines.Add(int64(b.lines))
	w.Checkpoints.Add(1)
	select {
	case d.committed <- struct{}{}:
	default:
	}
	return nil
}

// failDirect makes err the writer's: every Write from now on returns it.
func (w *Out) failDirect(err error) error {
	d := &w.direct
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.mu.Unlock()
	return err
}

// keepWrittenLines is the recovery of a direct writer's file: the complete
// lines past the checkpoint stay (their pages may be done: nothing else
// holds them), a part of a line at the end is cut, and the task IDs of the
// kept lines are returned, to be skipped with the checkpoint's Recent. The
// file is synced before the new checkpoint claims them.
func (w *Out) keepWrittenLines(size int64) (ids []string, err error) {
	tail := make([]byte, size-w.pos.Size)
	if _, err := w.f.ReadAt(tail, w.pos.Size); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("--out: %w", err)
	}
	keep := bytes.LastIndexByte(tail, '\n') + 1
	for _, line := range bytes.Split(tail[:keep], []byte{'\n'}) {
		var rec struct {
			TaskID string `json:"task_id"`
		}
		if len(line) > 0 && json.Unmarshal(line, &rec) == nil && rec.TaskID != "" {
			ids = append(ids, rec.TaskID)
		}
	}
	if err := w.f.Truncate(w.pos.Size + int64(keep)); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	if w.o.Log != nil && (keep > 0 || int64(keep) < size-w.pos.Size) {
		w.o.Log.Info("--out: kept the lines written after the last checkpoint", "file", w.f.Name(),
			"lines", len(ids), "cut bytes", size-w.pos.Size-int64(keep))
	}
	w.pos.Size += int64(keep)
	return ids, nil
}
