package archive

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

func publishParsed(t *testing.T, js jetstream.JetStream, names subjects.Names, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		doc, _ := json.Marshal(messages.Parsed{V: messages.Version, URL: fmt.Sprintf("http://a.test/%d", i), Status: 200, Outlinks: []string{}})
		testbus.Publish(t, js, names.PagesParsed(), doc)
	}
}

// outURLs reads the output file: URL -> lines.
func outURLs(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p messages.Parsed
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got[p.URL]++
	}
	return got
}

func wantEachOnce(t *testing.T, path string, n int) {
	t.Helper()
	got := outURLs(t, path)
	for i := range n {
		u := fmt.Sprintf("http://a.test/%d", i)
		if got[u] != 1 {
			t.Errorf("%s: %d lines, want 1", u, got[u])
		}
	}
	if len(got) != n {
		t.Errorf("%d URLs in the file, want %d", len(got), n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, what, cond)
}

func outOptions(js jetstream.JetStream, names subjects.Names, path string) OutOptions {
	return OutOptions{JS: js, Names: names, Path: path, Every: 20 * time.Millisecond, AckWait: time.Second}
}

// startOut runs an Out as `trawler run` does: built, prepared, run; finish
// drains it (when drain is set), ends its Run and returns Run's error.
func startOut(t *testing.T, o OutOptions, setup func(*Out)) (w *Out, finish func(drain bool) error) {
	t.Helper()
	w = NewOut(o)
	if setup != nil {
		setup(w)
	}
	if err := w.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	return w, func(drain bool) error {
		if drain {
			if err := w.Drain(context.Background()); err != nil {
				return err
			}
		}
		cancel()
		return <-errc
	}
}

// A crash after a batch's lines reached the file but before its checkpoint:
// the batch was not acknowledged, so JetStream delivers it again, and the
// next writer cuts the lines off before writing them again. Each URL ends up
// in the file once.
func TestOutRedoneBatchWritesNoDuplicate(t *testing.T) {
	js, names := testbus.Start(t, 1)
	path := filepath.Join(t.TempDir(), "pages.jsonl")

	var armed atomic.Bool
	errCrash := errors.New("crash")
	w, finish := startOut(t, outOptions(js, names, path), func(w *Out) {
		w.crash = func() error {
			if armed.Load() {
				return errCrash
			}
			return nil
		}
	})
	publishParsed(t, js, names, 0, 10)
	waitFor(t, "the first batches", func() bool { return w.Lines.Load() == 10 })
	armed.Store(true)
	publishParsed(t, js, names, 10, 25)
	<-w.stopped // the crash stopped the writer
	if err := finish(false); !errors.Is(err, errCrash) {
		t.Fatalf("Run: %v, want the crash", err)
	}
	if got := outURLs(t, path); len(got) <= 10 {
		t.Fatalf("the crashed batch left %d URLs in the file; the test wants it written and not checkpointed", len(got))
	}

	// The next writer gets newer pages first and the crashed batch only
	// after its ack wait: the batch must not be taken for written because
	// higher sequences were checkpointed meanwhile.
	w2, finish2 := startOut(t, outOptions(js, names, path), nil)
	publishParsed(t, js, names, 25, 40)
	waitFor(t, "the new pages and the redelivered batch", func() bool { return w2.Lines.Load() == 30 })
	if err := finish2(true); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, 40)
}

// The same crash in the file's very first batch: with no checkpoint yet, the
// next writer took the file for one of the user's and appended to it, so the
// batch was in it twice (TestResumeAfterKill9 saw it, once in ~15 runs: the
// kill fell between the first batch's lines and its checkpoint). A writer
// checkpoints the file's size before it writes any line.
func TestOutFirstBatchRedoneWritesNoDuplicate(t *testing.T) {
	js, names := testbus.Start(t, 1)
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	// A file of the user's, before the crawl: kept as it is.
	mine := "{\"url\":\"http://a.test/mine\"}\n"
	if err := os.WriteFile(path, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	errCrash := errors.New("crash")
	w, finish := startOut(t, outOptions(js, names, path), func(w *Out) {
		w.crash = func() error { return errCrash }
	})
	publishParsed(t, js, names, 0, 10)
	<-w.stopped
	if err := finish(false); !errors.Is(err, errCrash) {
		t.Fatalf("Run: %v, want the crash", err)
	}
	if got := outURLs(t, path); len(got) <= 1 {
		t.Fatalf("the crashed batch left %d URLs in the file; the test wants it written and not checkpointed", len(got))
	}
	w2, finish2 := startOut(t, outOptions(js, names, path), nil)
	waitFor(t, "the redelivered batch", func() bool { return w2.Lines.Load() == 10 })
	if err := finish2(true); err != nil {
		t.Fatal(err)
	}
	got := outURLs(t, path)
	if got["http://a.test/mine"] != 1 {
		t.Errorf("the user's line: %d times, want 1", got["http://a.test/mine"])
	}
	delete(got, "http://a.test/mine")
	for i := range 10 {
		if u := fmt.Sprintf("http://a.test/%d", i); got[u] != 1 {
			t.Errorf("%s: %d lines, want 1", u, got[u])
		}
	}
}

// A batch's lines reach the file as its messages come, not when the batch
// ends: a crawl's end waits only for the sync and the checkpoint of its last
// batch, not for the copy of a second of pages. They count as written
// (Lines) only once checkpointed.
func TestOutWritesLinesAsTheBatchGathers(t *testing.T) {
	js, names := testbus.Start(t, 1)
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	o := outOptions(js, names, path)
	o.Every = time.Hour // the batch ends only at Drain
	w, finish := startOut(t, o, nil)
	publishParsed(t, js, names, 0, 5)
	publishParsed(t, js, names, 5, 10)
	waitFor(t, "10 lines in the file before the batch ends", func() bool { return len(outURLs(t, path)) == 10 })
	if n, c := w.Lines.Load(), w.Checkpoints.Load(); n != 0 || c != 0 {
		t.Fatalf("%d lines counted, %d checkpoints before the batch ended; want none", n, c)
	}
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	if n, c := w.Lines.Load(), w.Checkpoints.Load(); n != 10 || c != 1 {
		t.Errorf("after Drain: %d lines, %d checkpoints; want 10 and 1", n, c)
	}
	wantEachOnce(t, path, 10)
}

// A crash after the checkpoint but before the acks reached JetStream: the
// batch comes again and is skipped. Deleting the consumer replays the whole
// stream, which is the same case for every message.
func TestOutCheckpointedBatchIsNotWrittenAgain(t *testing.T) {
	js, names := testbus.Start(t, 1)
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	ctx := context.Background()
	w, finish := startOut(t, outOptions(js, names, path), nil)
	publishParsed(t, js, names, 0, 30)
	waitFor(t, "30 lines", func() bool { return w.Lines.Load() == 30 })
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	if n := w.Checkpoints.Load(); n < 1 || n > 30 {
		t.Errorf("%d checkpoints for 30 lines", n)
	}
	if err := js.DeleteConsumer(ctx, names.StreamParsed(), ConsumerOut); err != nil {
		t.Fatal(err)
	}
	w2, finish2 := startOut(t, outOptions(js, names, path), nil)
	publishParsed(t, js, names, 30, 35)
	waitFor(t, "the 5 new lines", func() bool { return w2.Lines.Load() == 5 })
	if err := finish2(true); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, 35)
}

// Issue 19 #9: the checkpoint used to be written through the fixed name
// PATH.checkpoint.tmp, following a symlink planted there and overwriting its
// target. Now the temporary file has a fresh name, created exclusively.
func TestOutCheckpointDoesNotFollowPlantedSymlink(t *testing.T) {
	js, names := testbus.Start(t, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "pages.jsonl")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path+".checkpoint.tmp"); err != nil {
		t.Fatal(err)
	}
	w, finish := startOut(t, outOptions(js, names, path), nil)
	publishParsed(t, js, names, 0, 3)
	waitFor(t, "3 lines", func() bool { return w.Lines.Load() == 3 })
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("the symlink's target was overwritten: %q", data)
	}
	var ck outCheckpoint
	data, err := os.ReadFile(path + ".checkpoint")
	if err != nil || json.Unmarshal(data, &ck) != nil || !ck.has(1) || !ck.has(3) || ck.has(4) {
		t.Errorf("checkpoint %q (%v), want sequences 1-3", data, err)
	}
	if fi, err := os.Lstat(path + ".checkpoint"); err != nil || fi.Mode()&os.ModeSymlink != 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("checkpoint file: %v, %v", fi.Mode(), err)
	}
	wantEachOnce(t, path, 3)
}

// replaceFile replaces a symlink at the path itself instead of writing
// through it, and recovery removes only its own leftover temporaries (a
// symlink among them as a link, never its target).
func TestReplaceFileAndStaleTemps(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.checkpoint")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := replaceFile(path, []byte(`{"seq":1}`)); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("victim overwritten: %q", data)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"seq":1}` {
		t.Errorf("checkpoint %q", data)
	}
	stale := filepath.Join(dir, "x.checkpoint.12345.tmp")
	if err := os.Symlink(victim, stale); err != nil {
		t.Fatal(err)
	}
	keep := []string{"x.checkpoint.tmp", "x.checkpoint.abc.tmp", "y.checkpoint.1.tmp"}
	for _, k := range keep {
		if err := os.WriteFile(filepath.Join(dir, k), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleTemps(path)
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary left: %v", err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("victim touched: %q", data)
	}
	for _, k := range keep {
		if _, err := os.Stat(filepath.Join(dir, k)); err != nil {
			t.Errorf("%s removed: %v", k, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1+len(keep) {
		t.Errorf("directory holds %d entries, want %d", len(entries), 1+len(keep))
	}
}

func TestOutCheckpointSequences(t *testing.T) {
	var old outCheckpoint // written by versions before the sequence list
	if err := json.Unmarshal([]byte(`{"seq":7,"size":100}`), &old); err != nil {
		t.Fatal(err)
	}
	if !old.has(1) || !old.has(7) || old.has(8) {
		t.Errorf("old checkpoint %+v", old)
	}
	c := outCheckpoint{Seq: 3, Above: []uint64{5, 6, 9, 12}}
	for seq, want := range map[uint64]bool{1: true, 3: true, 4: false, 5: true, 7: false, 9: true, 12: true, 13: false} {
		if c.has(seq) != want {
			t.Errorf("has(%d) = %v", seq, !want)
		}
	}
	c.raise(2)
	c.raise(9)
	if c.Seq != 9 || !slices.Equal(c.Above, []uint64{12}) || !c.has(7) {
		t.Errorf("after raise(9): %+v", c)
	}
}

// NewOut opens and creates nothing; Prepare opens the file and creates the
// consumer, before Run.
func TestOutNewStartsNothing(t *testing.T) {
	js, names := testbus.Start(t, 1)
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	ctx := context.Background()
	w := NewOut(outOptions(js, names, path))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file after NewOut: %v", err)
	}
	if _, err := js.Consumer(ctx, names.StreamParsed(), ConsumerOut); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("consumer after NewOut: %v", err)
	}
	if err := w.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.f.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("file after Prepare: %v", err)
	}
	if _, err := js.Consumer(ctx, names.StreamParsed(), ConsumerOut); err != nil {
		t.Errorf("consumer after Prepare: %v", err)
	}
	if err := NewOut(outOptions(js, names, filepath.Join(path, "not-a-dir", "x"))).Prepare(ctx); err == nil {
		t.Error("Prepare of an impossible path succeeded")
	}
}

// At a finished crawl's end nothing more is coming: Drain has the writer
// write what it holds at once instead of waiting out its batch's linger
// (here an hour; by default a second, which every `trawler run --out` paid
// at its end).
func TestOutDrainDoesNotWaitForTheLinger(t *testing.T) {
	js, names := testbus.Start(t, 1)
	path := filepath.Join(t.TempDir(), "pages.jsonl")
	o := outOptions(js, names, path)
	o.Every = time.Hour
	w, finish := startOut(t, o, nil)
	publishParsed(t, js, names, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Drain waited for the batch's linger: %d of 5 lines written", w.Lines.Load())
	}
	if err := finish(false); err != nil {
		t.Fatal(err)
	}
	wantEachOnce(t, path, 5)
}

// gather hands its batch over when the flush signal comes, however long the
// linger, and lingers no more once it has come.
func TestGatherStopsLingeringOnFlush(t *testing.T) {
	in := make(chan jetstream.Msg, 4)
	in <- nil
	flush := newFlushSignal()
	got := make(chan int, 1)
	go func() { got <- len(gather(context.Background(), in, 10, time.Hour, flush)) }()
	select {
	case n := <-got:
		t.Fatalf("gather returned %d messages before the flush", n)
	case <-time.After(50 * time.Millisecond):
	}
	flush.Now()
	select {
	case n := <-got:
		if n != 1 {
			t.Fatalf("gather returned %d messages, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gather still lingers after the flush")
	}
	flush.Now() // twice is harmless
	in <- nil
	if n := len(gather(context.Background(), in, 10, time.Hour, flush)); n != 1 {
		t.Fatalf("after the flush gather returned %d messages, want 1", n)
	}
}
