package storetest

// Tasks in flight: stale completions, expiry and reopening a store.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

func testStaleDone(t *testing.T, open Opener) {
	s := open()
	const p = 2
	mustApply(t, s, p, 1, []store.Queued{q("a", "http://a/1"), q("a", "http://a/2"), q("b", "http://b/1")}, nil)
	mustPop(t, s, p, issue("a", "t1"), issue("b", "tb"))

	// Wrong task ID and unknown host: both ignored, the batch still applies.
	if !mustApply(t, s, p, 2, nil, []store.Done{{Host: "a", TaskID: "t0"}, {Host: "zzz", TaskID: "t1"}}) {
		t.Fatal("batch with stale dones not applied")
	}
	if in := mustPop(t, s, p, issue("a", "t2")); len(in) != 0 {
		t.Errorf("stale done freed the host: %s", dump(in))
	}
	wantStats(t, s, []int{p}, store.Stats{Queued: 1, InFlight: 2, Enqueued: 3})
	st := mustLoad(t, s, p)
	if len(st.Hosts) != 2 || st.Hosts[0].InFlight == nil || st.Hosts[0].InFlight.Task.ID != "t1" || st.Hosts[0].Queued != 1 {
		t.Errorf("after stale done: %s", dump(st))
	}

	// The matching done frees a; b gets a new URL and is freed in one batch.
	mustApply(t, s, p, 3, []store.Queued{q("b", "http://b/2")}, []store.Done{{Host: "a", TaskID: "t1"}, {Host: "b", TaskID: "tb"}})
	wantStats(t, s, []int{p}, store.Stats{Queued: 2, InFlight: 0, Enqueued: 4})
	st = mustLoad(t, s, p)
	if len(st.Hosts) != 2 || st.Hosts[0].InFlight != nil || st.Hosts[1].InFlight != nil ||
		st.Hosts[0].Queued != 1 || st.Hosts[1].Queued != 1 {
		t.Errorf("after done: %s", dump(st))
	}
	in := mustPop(t, s, p, issue("a", "t3"), issue("b", "t4"))
	if len(in) != 2 || in[0].Task.URL != "http://a/2" || in[1].Task.URL != "http://b/2" {
		t.Errorf("Pop after done: %s", dump(in))
	}
	// Freeing the last task of a host with an empty queue makes it idle.
	mustApply(t, s, p, 4, nil, []store.Done{{Host: "a", TaskID: "t3"}, {Host: "b", TaskID: "t4"}})
	if st := mustLoad(t, s, p); len(st.Hosts) != 0 {
		t.Errorf("idle hosts still loaded: %s", dump(st))
	}
}

func testExpire(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const p, maxAttempts = 6, 3
	mustApply(t, s, p, 1, []store.Queued{
		{Host: "a", Link: messages.Link{URL: "http://a/1", Depth: 1, Hops: 2}},
		q("a", "http://a/2"),
	}, nil)
	mustPop(t, s, p, issue("a", "t1"))

	expire := func(host, id string, want bool) {
		t.Helper()
		got, err := s.Expire(ctx, p, host, id, maxAttempts)
		if err != nil || got != want {
			t.Fatalf("Expire(%s, %s) = %v, %v; want %v", host, id, got, err, want)
		}
	}
	expire("a", "wrong", false)
	expire("nobody", "t1", false)
	wantStats(t, s, []int{p}, store.Stats{Queued: 1, InFlight: 1, Enqueued: 2})

	// Requeued at the head, with Attempt+1 and its depth and hops.
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if attempt > 1 {
			in := mustPop(t, s, p, issue("a", fmt.Sprintf("t%d", attempt)))
			if len(in) != 1 {
				t.Fatalf("attempt %d: nothing popped", attempt)
			}
			tk := in[0].Task
			if tk.URL != "http://a/1" || tk.Attempt != attempt || tk.Depth != 1 || tk.Hops != 2 {
				t.Fatalf("attempt %d: task %s", attempt, dump(tk))
			}
		}
		expire("a", fmt.Sprintf("t%d", attempt), attempt < maxAttempts)
		expire("a", fmt.Sprintf("t%d", attempt), false) // already handled
	}
	// Dropped after maxAttempts; the host is free for the next URL.
	wantStats(t, s, []int{p}, store.Stats{Queued: 1, InFlight: 0, Enqueued: 2})
	in := mustPop(t, s, p, issue("a", "t9"))
	if len(in) != 1 || in[0].Task.URL != "http://a/2" || in[0].Task.Attempt != 1 {
		t.Fatalf("after drop: %s", dump(in))
	}
	got, err := s.Expire(ctx, p, "a", "t9", 1)
	if err != nil || got {
		t.Fatalf("Expire with maxAttempts 1 = %v, %v; want dropped", got, err)
	}
	if st := mustLoad(t, s, p); len(st.Hosts) != 0 {
		t.Errorf("host still loaded after its last URL was dropped: %s", dump(st))
	}
	wantStats(t, s, []int{p}, store.Stats{Enqueued: 2})
}

func testReopen(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	parts := []int{0, 7}
	for _, p := range parts {
		if err := s.Record(ctx, p, []uint64{10, 20, uint64(p)}); err != nil {
			t.Fatal(err)
		}
		mustApply(t, s, p, 3, []store.Queued{q("a", "http://a/1"), q("a", "http://a/2"), q("b", "http://b/1"), q("a", "http://a/3")}, nil)
		mustPop(t, s, p, issue("a", "ta"))
		mustApply(t, s, p, 4, []store.Queued{q("c", "http://c/1")}, nil)
	}
	mustBudget(t, s, 5, 0)
	before := map[int]string{}
	for _, p := range parts {
		before[p] = dump(mustLoad(t, s, p))
	}
	stats := mustStats(t, s, parts)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seen(ctx, 0, []uint64{1}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Seen after Close: %v, want store.ErrClosed", err)
	}
	if _, err := s.Apply(ctx, 0, 99, nil, nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Apply after Close: %v, want store.ErrClosed", err)
	}
	if _, err := s.Count(ctx, 0); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Count after Close: %v, want store.ErrClosed", err)
	}
	if err := s.Scan(ctx, 0, func([]uint64) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Scan after Close: %v, want store.ErrClosed", err)
	}

	s = open()
	for _, p := range parts {
		if after := dump(mustLoad(t, s, p)); after != before[p] {
			t.Errorf("partition %d after reopen:\n%s\nwant\n%s", p, after, before[p])
		}
		if got := mustSeen(t, s, p, []uint64{10, 20, 30}); !slices.Equal(got, []bool{true, true, false}) {
			t.Errorf("Seen after reopen = %v", got)
		}
		if got := mustCount(t, s, p); got != 3 {
			t.Errorf("Count after reopen = %d, want 3", got)
		}
	}
	wantStats(t, s, parts, stats)

	// Work goes on where it stopped: appends after the old tail, a requeue
	// before the old head.
	p := parts[1]
	mustApply(t, s, p, 5, []store.Queued{q("a", "http://a/4")}, nil)
	if requeued, err := s.Expire(ctx, p, "a", "ta", 2); err != nil || !requeued {
		t.Fatalf("Expire after reopen = %v, %v", requeued, err)
	}
	var urls []string
	for i := range 6 {
		id := fmt.Sprintf("r%d", i)
		in := mustPop(t, s, p, issue("a", id))
		if len(in) == 0 {
			break
		}
		urls = append(urls, in[0].Task.URL)
		mustApply(t, s, p, uint64(10+i), nil, []store.Done{{Host: "a", TaskID: id}})
	}
	if want := []string{"http://a/1", "http://a/2", "http://a/3", "http://a/4"}; !slices.Equal(urls, want) {
		t.Errorf("after reopen host a popped %v, want %v", urls, want)
	}
	if got := mustBudget(t, s, 1, 0); got != 1 || mustStats(t, s, nil).Issued != 6 {
		t.Errorf("budget not kept across reopen")
	}
}

func mustLoad(t testing.TB, s store.Store, p int) store.PartitionState {
	t.Helper()
	st, err := s.Load(context.Background(), p)
	if err != nil {
		t.Fatalf("Load(%d): %v", p, err)
	}
	return st
}
