package dedup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/urltrace"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// TestTraceRecordsWhatWasReceived runs dedup with tracing on and checks the
// trace holds exactly the fingerprints each partition received, repeats
// included, in order; invalid URLs are not received, and a misrouted one is
// recorded where it is re-routed to.
func TestTraceRecordsWhatWasReceived(t *testing.T) {
	const P = 3
	js, names := testbus.Start(t, P)
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	svc := New(Options{JS: js, Names: names, Seen: st, Partitions: []int{0, 1, 2}, PartitionCount: P, MaxDeliver: 5,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), TraceDir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()

	partOf := func(u string) int {
		h, _ := urlx.Host(u)
		return urlx.Partition(h, P)
	}
	want := map[int][]uint64{}
	sent := 0
	publish := func(p int, urls ...string) {
		var links []messages.Link
		for _, u := range urls {
			links = append(links, messages.Link{URL: u, Depth: 1})
		}
		data, _ := json.Marshal(messages.Discovered{V: 1, Partition: p, Via: "link", Links: links})
		testbus.Publish(t, js, names.Discovered(p), data)
	}
	for i := range 40 {
		u := fmt.Sprintf("http://h%d.example/p%d", i%7, i%5) // repeats across messages
		p := partOf(u)
		publish(p, u, u, "::bad::")
		want[p] = append(want[p], urlx.Fingerprint(u), urlx.Fingerprint(u))
		sent += 3
	}
	mis := "http://h1.example/moved"
	publish((partOf(mis)+1)%P, mis)
	sent++
	// The re-routed link is received again by its own partition, after
	// everything published before it there.
	want[partOf(mis)] = append(want[partOf(mis)], urlx.Fingerprint(mis))

	deadline := time.Now().Add(10 * time.Second)
	for svc.Stats.In.Load() < int64(sent+1) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// A batch counted is being handled; Run finishes it before returning.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.urltrace"))
	if len(files) != 1 {
		t.Fatalf("trace files %v, want one", files)
	}
	for p := range P {
		got, h, torn, err := urltrace.ReadFile(files[0], p)
		if err != nil || torn || h.Kind != urltrace.Full || h.Partitions != P {
			t.Fatalf("read: header %+v torn %v err %v", h, torn, err)
		}
		if !slices.Equal(got, want[p]) {
			t.Errorf("partition %d: trace %x\nwant %x", p, got, want[p])
		}
	}
}

func TestNoTraceByDefault(t *testing.T) {
	js, names := testbus.Start(t, 1)
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	t.Chdir(dir)
	svc := New(Options{JS: js, Names: names, Seen: st, Partitions: []int{0}, PartitionCount: 1, MaxDeliver: 5,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := svc.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files written without a trace dir: %v", entries)
	}
}
