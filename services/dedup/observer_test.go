package dedup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// observed is an Observer that keeps what it sees, per partition.
type observed struct {
	mu  sync.Mutex
	fps map[int][]uint64
}

func (o *observed) Fingerprints(p int, fps []uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fps == nil {
		o.fps = map[int][]uint64{}
	}
	o.fps[p] = append(o.fps[p], fps...) // copied: dedup keeps fps
}

// TestObserverSeesWhatWasReceived runs dedup with an observer and checks it
// saw exactly the fingerprints each partition received, repeats included,
// in order; invalid URLs are not received, and a misrouted one is seen
// where it is re-routed to.
func TestObserverSeesWhatWasReceived(t *testing.T) {
	const P = 3
	js, names := testbus.Start(t, P)
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	obs := &observed{}
	svc := New(Options{JS: js, Names: names, Seen: st, Partitions: []int{0, 1, 2}, PartitionCount: P, MaxDeliver: 5,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: obs})
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

	testutil.Eventually(t, 10*time.Second, "dedup to take every batch", func() bool { return svc.Stats.In.Load() >= int64(sent+1) })
	// A batch counted is being handled; Run finishes it before returning.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for p := range P {
		if got := obs.fps[p]; !slices.Equal(got, want[p]) {
			t.Errorf("partition %d: observed %x\nwant %x", p, got, want[p])
		}
	}
}
