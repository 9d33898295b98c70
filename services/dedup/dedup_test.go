package dedup

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

func TestForwardsEachNewURLOnce(t *testing.T) {
	const P = 4
	js, names := testbus.Start(t, P)
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := New(Options{JS: js, Names: names, Seen: st, Partitions: []int{0, 1, 2, 3}, PartitionCount: P, MaxDeliver: 5,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)

	publish := func(p int, urls ...string) {
		var links []messages.Link
		for _, u := range urls {
			links = append(links, messages.Link{URL: u, Depth: 1})
		}
		data, _ := json.Marshal(messages.Discovered{V: 1, Partition: p, Via: "link", Links: links})
		testbus.Publish(t, js, names.Discovered(p), data)
	}
	partOf := func(u string) int {
		h, _ := urlx.Host(u)
		return urlx.Partition(h, P)
	}
	a1, a2 := "http://a.example/1", "http://a.example/2"
	pa := partOf(a1)
	wrong := (pa + 1) % P
	// Repeats inside one message, across messages, in another spelling, and
	// a URL sent to the wrong partition (re-routed, not lost).
	publish(pa, a1, a1, a2, "HTTP://A.EXAMPLE:80/1#frag", "not a url")
	publish(pa, a2, a1)
	publish(wrong, "http://a.example/3")

	var got []string
	testutil.WaitFor(5*time.Second, 0, func() bool { // Next itself waits
		if m := testbus.Next(t, js, names.StreamFrontier(), names.ConsumerFrontier(pa), 200*time.Millisecond); m != nil {
			var nu messages.NewURLs
			if err := messages.Decode(m.Data(), &nu); err != nil {
				t.Fatal(err)
			}
			for _, l := range nu.Links {
				got = append(got, l.URL)
			}
		}
		return len(got) >= 3
	})
	// Nothing more arrives.
	if m := testbus.Next(t, js, names.StreamFrontier(), names.ConsumerFrontier(pa), 300*time.Millisecond); m != nil {
		t.Errorf("extra message: %s", m.Data())
	}
	sort.Strings(got)
	if want := []string{a1, a2, "http://a.example/3"}; !slices.Equal(got, want) {
		t.Errorf("forwarded %v, want %v", got, want)
	}
	if svc.Stats.Invalid.Load() != 1 || svc.Stats.Misrouted.Load() != 1 {
		t.Errorf("stats: invalid %d misrouted %d", svc.Stats.Invalid.Load(), svc.Stats.Misrouted.Load())
	}
	seen, _ := st.Seen(ctx, pa, []uint64{urlx.Fingerprint(a1), urlx.Fingerprint(a2), urlx.Fingerprint("http://a.example/3")})
	if !slices.Equal(seen, []bool{true, true, true}) {
		t.Errorf("seen set: %v", seen)
	}
}
