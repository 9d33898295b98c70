package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// docOf is the parser's document of page i, handed over by task "t<i>".
func docOf(i int) (task string, doc []byte) {
	doc, _ = json.Marshal(messages.Parsed{V: messages.Version, TaskID: fmt.Sprintf("t%d", i), URL: fmt.Sprintf("http://a.test/%d", i), Status: 200, Outlinks: []string{}})
	return fmt.Sprintf("t%d", i), doc
}

func writeDocs(t *testing.T, w *Out, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := w.Write(docOf(i)); err != nil {
			t.Fatalf("Write %d: %v", i, err)
		}
	}
}

func directOptions(path string) OutOptions {
	o := outOptions(nil, subjects.Names{}, path)
	o.Direct = true
	return o
}

// A direct writer's lines are in the file as soon as Write returns, and a
// crash before their checkpoint keeps them: the pages were reported done,
// nothing would write them again. A page done again after the crash (its
// done report lost) gets no second line, nor does one handed over twice.
func TestOutDirectCrashKeepsWrittenLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	var armed atomic.Bool
	errCrash := errors.New("crash")
	w, finish := startOut(t, directOptions(path), func(w *Out) {
		w.crash = func() error {
			if armed.Load() {
				return errCrash
			}
			return nil
		}
	})
	writeDocs(t, w, 0, 10)
	writeDocs(t, w, 5, 10) // handed over again: written once
	waitFor(t, "the first batches", func() bool { return w.Lines.Load() == 10 })
	armed.Store(true)
	writeDocs(t, w, 10, 25)
	if got := len(outURLs(t, path)); got != 25 {
		t.Fatalf("%d URLs in the file once Write returned, want 25", got)
	}
	<-w.stopped // the crash stopped the writer between sync and checkpoint
	if err := finish(false); !errors.Is(err, errCrash) {
		t.Fatalf("Run: %v, want the crash", err)
	}
	if err := w.Write(docOf(99)); !errors.Is(err, errCrash) {
		t.Errorf("Write after the crash: %v, want the crash (the page must be done again)", err)
	}
	// And a part of a line, as a power loss in the middle of a write could
	// leave: cut.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, doc := docOf(40)
	f.Write(doc[:len(doc)/2])
	f.Close()

	w2, finish2 := startOut(t, directOptions(path), nil)
	writeDocs(t, w2, 20, 30) // 20..24 redone after the crash
	writeDocs(t, w2, 3, 4)   // done in the batch before the crash: in Recent
	if err := finish2(true); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, 30)
	var c outCheckpoint
	data, _ := os.ReadFile(path + ".checkpoint")
	if err := json.Unmarshal(data, &c); err != nil || !c.Direct {
		t.Errorf("checkpoint %s (%v): want a direct one", data, err)
	}
	if fi, _ := os.Stat(path); fi.Size() != c.Size {
		t.Errorf("file of %d bytes, checkpoint says %d", fi.Size(), c.Size)
	}
}

// A direct writer that stopped cleanly leaves nothing past its checkpoint:
// the next start neither syncs nor rewrites it, and still writes no second
// line for a page of the last batches done again (its done report lost).
func TestOutDirectCleanRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	w, finish := startOut(t, directOptions(path), nil)
	writeDocs(t, w, 0, 10)
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path + ".checkpoint")

	w2, finish2 := startOut(t, directOptions(path), nil)
	if after, _ := os.Stat(path + ".checkpoint"); !os.SameFile(before, after) {
		t.Error("the checkpoint was rewritten on a clean start")
	}
	writeDocs(t, w2, 8, 12) // 8 and 9: done again
	if err := finish2(true); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, 12)
}

// The writer changes kind between runs (`run --out` with and without
// --nats-listen): a consumer's checkpoint read by a direct writer cuts the
// uncheckpointed batch (the stream delivers it again... to a consumer this
// run deletes only when nothing is left, see app.outInProcess) and makes the
// checkpoint a direct one before any line; a direct writer's checkpoint read
// by a consumer's writer keeps the lines past it and skips their pages when
// the stream brings them again.
func TestOutChangesKindBetweenRuns(t *testing.T) {
	js, names := testbus.Start(t, 1)
	path := filepath.Join(t.TempDir(), "pages.jsonl")

	w, finish := startOut(t, outOptions(js, names, path), nil)
	publishParsed(t, js, names, 0, 5)
	waitFor(t, "the consumer's lines", func() bool { return w.Lines.Load() == 5 })
	if err := finish(true); err != nil {
		t.Fatal(err)
	}

	d := directOptions(path)
	d.Every = time.Hour // nothing checkpointed: the crash below keeps the lines all the same
	w2, finish2 := startOut(t, d, nil)
	data, _ := os.ReadFile(path + ".checkpoint")
	var c outCheckpoint
	if err := json.Unmarshal(data, &c); err != nil || !c.Direct {
		t.Fatalf("checkpoint after a direct writer's start: %s (%v), want a direct one", data, err)
	}
	for i := 5; i < 8; i++ {
		if err := w2.Write(docOf(i)); err != nil {
			t.Fatal(err)
		}
	}
	w2.crash = func() error { return errors.New("crash") }
	_ = finish2(false) // Run's end commits: the crash hook fails it, as a kill would leave it

	w3, finish3 := startOut(t, outOptions(js, names, path), nil)
	// Pages 5..7 done again, their documents on the stream.
	for i := 5; i < 10; i++ {
		task, doc := docOf(i)
		m := nats.NewMsg(names.PagesParsed())
		m.Data = doc
		m.Header.Set(nats.MsgIdHdr, "parsed:"+task)
		if _, err := js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the new pages", func() bool { return w3.Lines.Load() == 2 })
	if err := finish3(true); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, 10)
}

// Write is called by every parser worker at once. A batch ends at MaxBatch
// lines (more may join it while the last one syncs: writers never wait).
func TestOutDirectConcurrentWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	o := directOptions(path)
	o.MaxBatch = 7
	o.Every = time.Hour
	w, finish := startOut(t, o, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() { writeDocs(t, w, g*50, g*50+50) })
	}
	wg.Wait()
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, 400)
	if w.Lines.Load() != 400 || w.Checkpoints.Load() < 2 {
		t.Errorf("%d lines in %d checkpoints, want 400 in more than Drain's one", w.Lines.Load(), w.Checkpoints.Load())
	}
}

// A line that cannot be written (a full disk) is not taken: Write says so,
// the page is done again later, and Run stops with the error (which stops
// the crawl).
func TestOutDirectWriteFailureStopsTheWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	w, finish := startOut(t, directOptions(path), nil)
	writeDocs(t, w, 0, 3)
	w.f.Close() // every write fails from now on
	if err := w.Write(docOf(3)); err == nil {
		t.Fatal("Write to a closed file: no error")
	}
	select {
	case <-w.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run still running after a failed write")
	}
	if err := finish(false); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("Run: %v, want the write's error", err)
	}
	if err := w.Write(docOf(4)); err == nil {
		t.Error("Write after the failure: no error")
	}
}

// writeBehind starts the writeback of whole pages once a megabyte has
// gathered, never past what was written, and leaves the lines as written.
// (Whether the kernel then writes them early is its own: the figure is in
// docs/benchmarks.md.)
func TestOutDirectWritesBehindByWholePages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	w := NewOut(directOptions(path))
	if err := w.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.f.Close()
	d := &w.direct
	d.behind = w.pos.Size // as runDirect does; the test plays its part
	written := func() int64 {
		d.mu.Lock()
		defer d.mu.Unlock()
		return w.pos.Size + d.batch.size
	}
	pad := strings.Repeat("x", 10_000)
	i := 0
	for written() < writeBehindChunk/2 {
		task, _ := docOf(i)
		doc, _ := json.Marshal(messages.Parsed{V: messages.Version, TaskID: task, URL: fmt.Sprintf("http://a.test/%d", i), Title: pad, Outlinks: []string{}})
		if err := w.Write(task, doc); err != nil {
			t.Fatal(err)
		}
		i++
	}
	w.writeBehind()
	if d.behind != 0 {
		t.Fatalf("writeback started at %d bytes written, before a chunk (%d) gathered", d.behind, writeBehindChunk)
	}
	for written() < 3*writeBehindChunk+123 {
		task, _ := docOf(i)
		doc, _ := json.Marshal(messages.Parsed{V: messages.Version, TaskID: task, URL: fmt.Sprintf("http://a.test/%d", i), Title: pad, Outlinks: []string{}})
		if err := w.Write(task, doc); err != nil {
			t.Fatal(err)
		}
		i++
	}
	end := written()
	w.writeBehind()
	if d.behind%writeBehindPage != 0 || d.behind > end || end-d.behind >= writeBehindPage {
		t.Fatalf("writeback started up to %d of %d bytes written; want the last whole page", d.behind, end)
	}
	if err := w.commitDirect(); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, i)
}
