package storetest

// The crawl budget, the stats and argument checks.

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

func testBudget(t *testing.T, open Opener) {
	s := open()
	steps := []struct{ n, max, want int }{
		{3, 0, 3},   // unlimited, still counted
		{0, 10, 0},  // nothing asked
		{-2, 10, 0}, // nonsense asked
		{5, 10, 5},
		{5, 10, 2}, // only 2 left
		{5, 10, 0},
		{5, 5, 0}, // already above a lower max
		{4, -1, 4},
	}
	for _, st := range steps {
		if got := mustBudget(t, s, st.n, st.max); got != st.want {
			t.Errorf("TakeBudget(%d, %d) = %d, want %d", st.n, st.max, got, st.want)
		}
	}
	for _, parts := range [][]int{nil, {0}, {1, 2, 3}} {
		if got := mustStats(t, s, parts).Issued; got != 14 {
			t.Errorf("Stats(%v).Issued = %d, want 14", parts, got)
		}
	}
}

func testBudgetConcurrent(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const max, workers = 300, 24
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				got, err := s.TakeBudget(ctx, 1+w%5, max)
				if err != nil {
					t.Error(err)
					return
				}
				if got == 0 {
					return
				}
				mu.Lock()
				total += got
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if total != max {
		t.Errorf("granted %d in total, want %d", total, max)
	}
	if got := mustStats(t, s, nil).Issued; got != max {
		t.Errorf("Issued = %d, want %d", got, max)
	}
}

func testStats(t *testing.T, open Opener) {
	s := open()
	wantStats(t, s, []int{1, 2}, store.Stats{})
	mustApply(t, s, 1, 1, []store.Queued{q("a", "http://a/1"), q("a", "http://a/2")}, nil)
	mustApply(t, s, 2, 1, []store.Queued{q("b", "http://b/1"), q("c", "http://c/1"), q("c", "http://c/2")}, nil)
	mustPop(t, s, 2, issue("b", "tb"), issue("c", "tc"))
	mustBudget(t, s, 2, 0)
	wantStats(t, s, []int{1}, store.Stats{Queued: 2, Enqueued: 2, Issued: 2})
	wantStats(t, s, []int{2}, store.Stats{Queued: 1, InFlight: 2, Enqueued: 3, Issued: 2})
	wantStats(t, s, []int{1, 2, 3}, store.Stats{Queued: 3, InFlight: 2, Enqueued: 5, Issued: 2})
	mustApply(t, s, 2, 2, nil, []store.Done{{Host: "b", TaskID: "tb"}})
	wantStats(t, s, []int{1, 2}, store.Stats{Queued: 3, InFlight: 1, Enqueued: 5, Issued: 2})
}

func testBadArgs(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	if _, err := s.Seen(ctx, -1, []uint64{1}); err == nil {
		t.Error("negative partition accepted")
	}
	if _, err := s.Count(ctx, -1); err == nil {
		t.Error("Count: negative partition accepted")
	}
	if err := s.Scan(ctx, -1, func([]uint64) error { return nil }); err == nil {
		t.Error("Scan: negative partition accepted")
	}
	if _, err := s.Apply(ctx, 0, 1, []store.Queued{q("", "http://x/")}, nil); err == nil {
		t.Error("empty host accepted")
	}
	if _, err := s.Apply(ctx, 0, 1, []store.Queued{q("a\x00b", "http://x/")}, nil); err == nil {
		t.Error("host with NUL accepted")
	}
	if st := mustLoad(t, s, 0); st.Applied != 0 {
		t.Errorf("a rejected batch moved the watermark: %s", dump(st))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Pop(cctx, 0, []store.Issue{issue("a", "t")}); !errors.Is(err, context.Canceled) {
		t.Errorf("Pop with canceled context: %v", err)
	}
	// A URL enqueued without an attempt count is a first attempt.
	mustApply(t, s, 0, 1, []store.Queued{{Host: "a", Link: messages.Link{URL: "http://a/"}}}, nil)
	if in := mustPop(t, s, 0, issue("a", "t")); len(in) != 1 || in[0].Task.Attempt != 1 {
		t.Errorf("Attempt 0 enqueued: %s", dump(in))
	}
}

// ---- helpers ----

func mustBudget(t testing.TB, s store.Store, n, max int) int {
	t.Helper()
	got, err := s.TakeBudget(context.Background(), n, max)
	if err != nil {
		t.Fatalf("TakeBudget: %v", err)
	}
	return got
}

func mustStats(t testing.TB, s store.Store, parts []int) store.Stats {
	t.Helper()
	st, err := s.Stats(context.Background(), parts)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// wantStats checks Queued, InFlight and Enqueued, and Issued when non-zero.
func wantStats(t testing.TB, s store.Store, parts []int, want store.Stats) {
	t.Helper()
	got := mustStats(t, s, parts)
	if want.Issued == 0 {
		got.Issued = 0
	}
	if got != want {
		t.Errorf("Stats(%v) = %+v, want %+v", parts, got, want)
	}
}
