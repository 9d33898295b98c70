package archive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/warc"
	"github.com/trawlerhq/trawler/services/archive"
)

// A page the archive cannot represent (no metadata header, a URL with a
// line break) is dead-lettered; the good pages around it are archived and
// nothing is left pending.
func TestUnarchivablePagesAreDeadLettered(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	dir := t.TempDir()
	a, finish := startArchive(t, archive.Options{JS: js, Names: names, Dir: dir, UserAgent: "test", Log: quiet()})
	page := func(u string) []string {
		meta, _ := json.Marshal(messages.Page{V: messages.Version, URL: u, Status: 200, FetchedAt: time.Now()})
		return []string{messages.HeaderPage, string(meta)}
	}
	testbus.Publish(t, js, names.PagesFetched(), []byte("one"), page("http://a.test/1")...)
	testbus.Publish(t, js, names.PagesFetched(), []byte("no header"))
	testbus.Publish(t, js, names.PagesFetched(), []byte("bad"), page("http://a.test/\x01bad")...)
	testbus.Publish(t, js, names.PagesFetched(), []byte("two"), page("http://a.test/2")...)
	parsed, _ := json.Marshal(messages.Parsed{V: messages.Version, URL: "http://a.test/1", Status: 200, Outlinks: []string{"http://a.test/2"}})
	testbus.Publish(t, js, names.PagesParsed(), parsed)
	testbus.Publish(t, js, names.PagesParsed(), []byte("{not json"))
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n, err := archive.Pending(ctx, js, names); err != nil || n != 0 {
			return fmt.Errorf("still %d pending (%v)", n, err)
		}
		return nil
	})
	if err := finish(false); err != nil {
		t.Fatal(err)
	}
	if got := a.WARC.Stats.Parked.Load() + a.JSONL.Stats.Parked.Load(); got != 3 {
		t.Errorf("%d messages parked, want 3", got)
	}
	st, _ := js.Stream(context.Background(), names.StreamDLQ())
	if info, _ := st.Info(context.Background()); info.State.Msgs != 3 {
		t.Errorf("dead-letter stream holds %d messages, want 3", info.State.Msgs)
	}
	uris := responseURIs(t, dir)
	if len(uris) != 2 || uris[0] != "http://a.test/1" || uris[1] != "http://a.test/2" {
		t.Errorf("archived responses %v", uris)
	}
	lines, _ := filepath.Glob(filepath.Join(dir, "*"+archive.JSONLSuffix))
	if len(lines) != 1 {
		t.Fatalf("JSON Lines files %v", lines)
	}
	data, _ := os.ReadFile(lines[0])
	want := string(parsed) + "\n" // the document as published: messages.AppendParsedLine
	if string(data) != want {
		t.Errorf("JSON Lines file:\n%s\nwant\n%s", data, want)
	}
}

// The PAGES stream keeps pages for the archive's consumer even once the
// parser has acknowledged them (interest retention), and drops them once the
// archive has written them too.
func TestPagesWaitForTheArchive(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	if _, err := archive.EnsureWARC(ctx, js, names); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(messages.Page{V: messages.Version, URL: "http://a.test/", Status: 200})
	testbus.Publish(t, js, names.PagesFetched(), []byte("body"), messages.HeaderPage, string(meta))
	if m := testbus.Next(t, js, names.StreamPages(), names.ConsumerParser(), 5*time.Second); m == nil {
		t.Fatal("parser got nothing")
	}
	msgs := func() uint64 {
		st, _ := js.Stream(ctx, names.StreamPages())
		info, _ := st.Info(ctx)
		return info.State.Msgs
	}
	// Once the server has taken the parser's ack, the stream has decided
	// whether the message stays.
	testutil.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		c, err := js.Consumer(ctx, names.StreamPages(), names.ConsumerParser())
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < 1 {
			return fmt.Errorf("the parser's ack is not taken yet (ack floor %d)", info.AckFloor.Stream)
		}
		return nil
	})
	if n := msgs(); n != 1 {
		t.Fatalf("PAGES holds %d messages after the parser's ack, want 1 kept for the archive", n)
	}
	dir := t.TempDir()
	_, finish := startArchive(t, archive.Options{JS: js, Names: names, Dir: dir, Log: quiet()})
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	if !testutil.WaitFor(5*time.Second, 20*time.Millisecond, func() bool { return msgs() == 0 }) {
		t.Errorf("PAGES holds %d messages after the archive wrote them", msgs())
	}
	if err := archive.DeleteConsumers(ctx, js, names); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Consumer(ctx, names.StreamPages(), archive.ConsumerWARC); err != jetstream.ErrConsumerNotFound {
		t.Errorf("consumer after DeleteConsumers: %v", err)
	}
}

// startArchive runs an archive as `trawler run` does: built, prepared,
// run; finish drains it (when drain is set), ends its Run and returns Run's
// error.
func startArchive(t *testing.T, o archive.Options) (a *archive.Archive, finish func(drain bool) error) {
	t.Helper()
	a = archive.New(o)
	if err := a.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	return a, func(drain bool) error {
		if drain {
			if err := a.Drain(context.Background()); err != nil {
				return err
			}
		}
		cancel()
		return <-errc
	}
}

// The archive follows the services' contract: New creates nothing (no
// consumer, no file), Run alone prepares it.
func TestArchiveNewStartsNothing(t *testing.T) {
	js, names := testbus.Start(t, 1)
	dir := filepath.Join(t.TempDir(), "archive")
	a := archive.New(archive.Options{JS: js, Names: names, Dir: dir, Log: quiet()})
	ctx := context.Background()
	if _, err := js.Consumer(ctx, names.StreamPages(), archive.ConsumerWARC); err != jetstream.ErrConsumerNotFound {
		t.Fatalf("consumer after New: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory after New: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- a.Run(runCtx) }()
	testutil.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		_, errW := js.Consumer(ctx, names.StreamPages(), archive.ConsumerWARC)
		_, errJ := js.Consumer(ctx, names.StreamParsed(), archive.ConsumerJSONL)
		if errW != nil || errJ != nil {
			return fmt.Errorf("Run created no consumers: %v, %v", errW, errJ)
		}
		return nil
	})
	if err := a.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := archive.New(archive.Options{JS: js, Names: names, Log: quiet()}).Prepare(ctx); err == nil {
		t.Error("Prepare without a directory succeeded")
	}
}

func TestRecoverLines(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a-1.jsonl.open", "{\"url\":\"x\"}\n{\"url\":\"y\"}\n{\"url\":\"z")
	write("b-1.jsonl.open", "{\"url\":\"half")
	done, err := archive.RecoverLines(dir)
	if err != nil || len(done) != 1 {
		t.Fatalf("recovered %v, %v", done, err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "a-1.jsonl"))
	if string(data) != "{\"url\":\"x\"}\n{\"url\":\"y\"}\n" {
		t.Errorf("recovered file %q", data)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// Pending counts a page from the moment its publish is acknowledged: the
// server tells the sink's consumer of it later, from a queue, and a Drain
// that trusted the consumer's count alone could end a crawl's archive
// without its last pages.
func TestPendingCountsAPageAsSoonAsItIsPublished(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	a := archive.New(archive.Options{JS: js, Names: names, Dir: t.TempDir(), Log: quiet()})
	if err := a.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		subject := names.PagesFetched()
		if i%2 == 1 {
			subject = names.PagesParsed()
		}
		testbus.Publish(t, js, subject, []byte("x"))
		if n, err := archive.Pending(ctx, js, names); err != nil || n != uint64(i+1) {
			t.Fatalf("after %d publishes: %d pending (%v)", i+1, n, err)
		}
	}
}

// `trawler run --archive` without --nats-listen hands the archive its pages
// and documents in process (Options.Direct): no consumer, the same records
// and lines, an unarchivable page counted and skipped (the page itself is
// done), and Drain makes everything written durable.
func TestArchiveHandedItsPages(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	dir := t.TempDir()
	a, finish := startArchive(t, archive.Options{JS: js, Names: names, Dir: dir, UserAgent: "test", Log: quiet(), Direct: true})
	page := func(u, body string) jetstream.Msg {
		meta, _ := json.Marshal(messages.Page{V: messages.Version, URL: u, Status: 200, FetchedAt: time.Now()})
		m := nats.NewMsg(names.PagesFetched())
		m.Header.Set(messages.HeaderPage, string(meta))
		m.Data = []byte(body)
		return bus.NewLocalMsg(m, nil)
	}
	for _, m := range []jetstream.Msg{page("http://a.test/1", "one"), page("http://a.test/\x01bad", "bad"), page("http://a.test/2", "two")} {
		if err := a.HandPage(m); err != nil {
			t.Fatal(err)
		}
	}
	parsed, _ := json.Marshal(messages.Parsed{V: messages.Version, URL: "http://a.test/1", Status: 200, Outlinks: []string{"http://a.test/2"}})
	if err := a.HandDoc(parsed); err != nil {
		t.Fatal(err)
	}
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	if got := a.WARC.Stats.Parked.Load(); got != 1 {
		t.Errorf("%d pages skipped, want 1", got)
	}
	for stream, name := range map[string]string{names.StreamPages(): archive.ConsumerWARC, names.StreamParsed(): archive.ConsumerJSONL} {
		if _, err := js.Consumer(ctx, stream, name); !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Errorf("consumer %s: %v, want none", name, err)
		}
	}
	uris := responseURIs(t, dir)
	if len(uris) != 2 || uris[0] != "http://a.test/1" || uris[1] != "http://a.test/2" {
		t.Errorf("archived responses %v", uris)
	}
	lines, _ := filepath.Glob(filepath.Join(dir, "*"+archive.JSONLSuffix))
	if open, _ := filepath.Glob(filepath.Join(dir, "*"+archive.OpenSuffix)); len(lines) != 1 || len(open) != 0 {
		t.Fatalf("JSON Lines files %v, open files %v", lines, open)
	}
	if data, _ := os.ReadFile(lines[0]); string(data) != string(parsed)+"\n" {
		t.Errorf("JSON Lines file:\n%s\nwant\n%s", data, parsed)
	}
}

// responseURIs are the target URIs of the response records in dir's WARC
// files, in order.
func responseURIs(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+warc.Suffix))
	var uris []string
	for _, f := range files {
		fh, _ := os.Open(f)
		recs, err := warc.ReadAll(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Get("WARC-Type") == warc.TypeResponse {
				uris = append(uris, r.Get("WARC-Target-URI"))
			}
		}
	}
	return uris
}
