// Package storetest is the conformance suite of store.Store: every store
// (bbolt, Redis, and any third) runs the same tests, as nats-server runs its
// stream tests against the file and the memory store.
//
// A store's own tests call Run with a Backend that makes an empty, isolated
// store per test:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t testing.TB) func() store.Store {
//			dir := t.TempDir()
//			return func() store.Store {
//				s, err := mystore.Open(dir) // the same data on every call
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { s.Close() })
//				return s
//			}
//		})
//	}
//
// See docs/store.md, "Adding a store".
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// Opener opens a test's store. Calling it again after Close reopens the same
// data (bbolt: the same file; Redis: a new client on the same prefix): the
// suite checks what survives a restart. A store it returns should be closed
// by a t.Cleanup of the Backend; the suite also closes some itself, so Close
// must be safe to call twice.
type Opener = func() store.Store

// Backend makes an empty store namespace for one test, isolated from every
// other test's (a temporary directory, a random key prefix), and cleans it
// up with t.Cleanup.
type Backend = func(t testing.TB) Opener

// ScanChunk is the most fingerprints Scan may hand fn in one call: the
// suite records more than twice as many and checks that they come in
// bounded chunks (bbolt and Redis use exactly this).
const ScanChunk = 1 << 16

// Run runs the conformance suite against the stores newStore makes, one
// subtest per behaviour, each on a fresh namespace.
func Run(t *testing.T, newStore Backend) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"SeenRecord", testSeenRecord},
		{"SeenProperty", testSeenProperty},
		{"ScanCount", testScanCount},
		{"ApplyReplay", testApplyReplay},
		{"Step", testStep},
		{"IntakeLog", testIntakeLog},
		{"FIFO", testFIFO},
		{"Order", testOrder},
		{"HostBudget", testHostBudget},
		{"HostQueueCap", testHostQueueCap},
		{"NotBefore", testNotBefore},
		{"StaleDone", testStaleDone},
		{"PopSkips", testPopSkips},
		{"Expire", testExpire},
		{"Reopen", testReopen},
		{"Budget", testBudget},
		{"BudgetConcurrent", testBudgetConcurrent},
		{"Stats", testStats},
		{"BadArgs", testBadArgs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

// t0 is the fixed issue time of the suite's tasks.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testSeenRecord(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const p = 3
	if got := mustSeen(t, s, p, nil); len(got) != 0 {
		t.Errorf("Seen(nil) = %v", got)
	}
	if got := mustSeen(t, s, p, []uint64{1, 2, 3}); !slices.Equal(got, []bool{false, false, false}) {
		t.Errorf("Seen on empty set = %v", got)
	}
	if err := s.Record(ctx, p, []uint64{1, 2, 2, 3, 1, 0, math.MaxUint64}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, p, []uint64{3, 4, 4}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	got := mustSeen(t, s, p, []uint64{0, 1, 2, 3, 4, 5, 1, math.MaxUint64, math.MaxUint64 - 1, 4})
	want := []bool{true, true, true, true, true, false, true, true, false, true}
	if !slices.Equal(got, want) {
		t.Errorf("Seen = %v, want %v", got, want)
	}
	if got := mustSeen(t, s, p+1, []uint64{1, 2}); !slices.Equal(got, []bool{false, false}) {
		t.Errorf("another partition sees %v", got)
	}

	// A batch larger than one Redis command chunk, with repeats.
	rng := rand.New(rand.NewPCG(1, 2))
	fps := make([]uint64, 3*4096+17)
	for i := range fps {
		fps[i] = rng.Uint64()
	}
	known := fps[:len(fps)/2]
	if err := s.Record(ctx, p, append(slices.Clone(known), known[:100]...)); err != nil {
		t.Fatal(err)
	}
	got = mustSeen(t, s, p, fps)
	for i, seen := range got {
		if seen != (i < len(known)) {
			t.Fatalf("big batch: Seen[%d] = %v, want %v", i, seen, i < len(known))
		}
	}
}

// testSeenProperty runs random Seen and Record batches, with repeats inside
// and across batches, against an exact map. Fingerprints are drawn so that
// buckets fill densely, halves tie, and extremes and bucket-straddling big
// batches occur.
func testSeenProperty(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const seed = 20240611
	rng := rand.New(rand.NewPCG(seed, 1))
	parts := []int{0, 9}
	exact := map[int]map[uint64]bool{0: {}, 9: {}}
	var recorded []uint64
	extremes := []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 1<<63 - 1,
		1 << 32, 1<<32 - 1, 0xffff << 48, 0xffff<<48 - 1, 0x0001 << 48, 0x8000_0000_8000_0000}
	gen := func() uint64 {
		switch rng.IntN(8) {
		case 0, 1:
			if len(recorded) > 0 {
				return recorded[rng.IntN(len(recorded))]
			}
			return rng.Uint64()
		case 2: // a few dense buckets: low halves differ, high halves tie
			return uint64(rng.IntN(3))<<48 | rng.Uint64N(200)
		case 3: // one bucket, high halves differ, low halves tie
			return 0x7f<<56 | rng.Uint64N(50)<<32 | rng.Uint64N(3)
		case 4: // bytes with the top bit set in both halves
			return 0x8080_8080_8080_8080 | uint64(rng.IntN(256))<<32 | uint64(rng.IntN(256))
		case 5:
			return extremes[rng.IntN(len(extremes))]
		default:
			return rng.Uint64()
		}
	}
	for round := range 400 {
		p := parts[rng.IntN(len(parts))]
		var batch []uint64
		switch {
		case round%97 == 50: // more than one Redis script call (4096) in one bucket: calls split it
			for range 4096 + 1500 {
				batch = append(batch, 0x1234<<48|rng.Uint64N(1<<40))
			}
			batch = append(batch, batch[:300]...)
		default:
			for range rng.IntN(300) {
				batch = append(batch, gen())
			}
		}
		if rng.IntN(2) == 0 {
			got := mustSeen(t, s, p, batch)
			for i, fp := range batch {
				if got[i] != exact[p][fp] {
					t.Fatalf("seed %d round %d: Seen(p%d)[%d] (%#x) = %v, want %v", seed, round, p, i, fp, got[i], exact[p][fp])
				}
			}
			continue
		}
		if err := s.Record(ctx, p, batch); err != nil {
			t.Fatalf("round %d: Record: %v", round, err)
		}
		for _, fp := range batch {
			if !exact[p][fp] {
				exact[p][fp] = true
				recorded = append(recorded, fp)
			}
		}
		if got := mustCount(t, s, p); got != int64(len(exact[p])) {
			t.Fatalf("seed %d round %d: Count(p%d) = %d, want %d", seed, round, p, got, len(exact[p]))
		}
	}
	for _, p := range parts {
		want := make([]uint64, 0, len(exact[p]))
		for fp := range exact[p] {
			want = append(want, fp)
		}
		slices.Sort(want)
		if got := slices.Concat(scanChunks(t, s, p)...); !slices.Equal(got, want) {
			t.Errorf("Scan(p%d): %d fingerprints, want %d (equal sets in ascending order)", p, len(got), len(want))
		}
		// Everything recorded is seen, including through another batch mix.
		for i, ok := range mustSeen(t, s, p, want) {
			if !ok {
				t.Fatalf("p%d: recorded %#x not seen", p, want[i])
			}
		}
	}
}

// testScanCount checks that Scan streams exactly what was recorded, in
// ascending order and bounded chunks, and that Count counts distinct ones.
func testScanCount(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const p = 4
	if n := mustCount(t, s, p); n != 0 {
		t.Errorf("Count of an empty partition = %d", n)
	}
	if chunks := scanChunks(t, s, p); len(chunks) != 0 {
		t.Errorf("Scan of an empty partition called fn %d times", len(chunks))
	}
	mustApply(t, s, p, 1, []store.Queued{q("a", "http://a/")}, nil) // a partition with no fingerprints
	if n := mustCount(t, s, p); n != 0 {
		t.Errorf("Count without fingerprints = %d", n)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	want := map[uint64]bool{}
	var all []uint64
	for len(want) < 2*ScanChunk+1000 {
		batch := make([]uint64, 0, 10_000)
		for range 9_000 {
			batch = append(batch, rng.Uint64())
		}
		for range 1_000 { // repeats, from this batch and earlier ones
			if len(all) > 0 {
				batch = append(batch, all[rng.IntN(len(all))])
			}
		}
		batch = append(batch, 0, math.MaxUint64)
		if err := s.Record(ctx, p, batch); err != nil {
			t.Fatal(err)
		}
		for _, fp := range batch {
			if !want[fp] {
				want[fp] = true
				all = append(all, fp)
			}
		}
	}
	if n := mustCount(t, s, p); n != int64(len(want)) {
		t.Errorf("Count = %d, want %d", n, len(want))
	}
	chunks := scanChunks(t, s, p)
	if len(chunks) < 3 {
		t.Errorf("Scan of %d fingerprints came in %d chunks, want at least 3", len(want), len(chunks))
	}
	for i, c := range chunks {
		if len(c) == 0 || len(c) > ScanChunk {
			t.Errorf("chunk %d has %d fingerprints", i, len(c))
		}
	}
	got := slices.Concat(chunks...)
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Fatalf("Scan returned %d fingerprints (sorted: %v), want the %d recorded, ascending",
			len(got), slices.IsSorted(got), len(all))
	}

	// Recording again changes nothing; other partitions are untouched.
	if err := s.Record(ctx, p, all[:5000]); err != nil {
		t.Fatal(err)
	}
	if n := mustCount(t, s, p); n != int64(len(all)) {
		t.Errorf("Count after re-recording = %d, want %d", n, len(all))
	}
	if n, chunks := mustCount(t, s, p+1), scanChunks(t, s, p+1); n != 0 || len(chunks) != 0 {
		t.Errorf("partition %d: Count %d, %d chunks", p+1, n, len(chunks))
	}

	// An error from fn stops the scan and comes back as is.
	stop := errors.New("stop")
	calls := 0
	err := s.Scan(ctx, p, func([]uint64) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Scan with a failing fn: %v after %d calls, want stop after 1", err, calls)
	}

	// fn may use the store, e.g. copy a partition (bbolt: no deadlock).
	err = s.Scan(ctx, p, func(fps []uint64) error { return s.Record(ctx, p+2, fps) })
	if err != nil {
		t.Fatalf("Scan copying into p%d: %v", p+2, err)
	}
	if n := mustCount(t, s, p+2); n != int64(len(all)) {
		t.Errorf("copied partition counts %d, want %d", n, len(all))
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Scan(cctx, p, func([]uint64) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a canceled context: %v", err)
	}
}

func testApplyReplay(t *testing.T, open Opener) {
	s := open()
	const p = 5
	if mustApply(t, s, p, 0, []store.Queued{q("a", "http://a/0")}, nil) {
		t.Error("seq 0 applied on a fresh partition: not above applied 0")
	}
	if !mustApply(t, s, p, 5, []store.Queued{q("a", "http://a/1"), q("a", "http://a/2")}, nil) {
		t.Fatal("first batch not applied")
	}
	if mustApply(t, s, p, 5, []store.Queued{q("a", "http://a/x")}, nil) {
		t.Error("same seq applied twice")
	}
	if mustApply(t, s, p, 4, []store.Queued{q("b", "http://b/x")}, nil) {
		t.Error("lower seq applied")
	}
	st := mustLoad(t, s, p)
	if st.Applied != 5 || len(st.Hosts) != 1 || st.Hosts[0].Queued != 2 {
		t.Errorf("after replays: %s", dump(st))
	}
	if !mustApply(t, s, p, 9, []store.Queued{q("b", "http://b/1")}, nil) {
		t.Fatal("higher seq not applied")
	}
	if !mustApply(t, s, p, 10, nil, nil) {
		t.Error("empty batch not applied")
	}
	if st := mustLoad(t, s, p); st.Applied != 10 || len(st.Hosts) != 2 {
		t.Errorf("after seq 10: %s", dump(st))
	}
	wantStats(t, s, []int{p}, store.Stats{Queued: 3, Enqueued: 3})
	// Large sequences compare exactly (Redis compares them as strings).
	if !mustApply(t, s, p, math.MaxUint64-1, nil, nil) || mustApply(t, s, p, math.MaxUint64-2, nil, nil) {
		t.Error("large sequences misordered")
	}
	if st := mustLoad(t, s, p); st.Applied != math.MaxUint64-1 {
		t.Errorf("Applied = %d", st.Applied)
	}
}

// testStep: a step applies its batch, marks its sequences and pops the due
// hosts (the host its done freed included) in one go; a replayed step
// changes nothing and says so.
func testStep(t *testing.T, open Opener) {
	s := open()
	ctx := context.Background()
	const p = 3
	if !mustApply(t, s, p, 1, []store.Queued{q("a", "http://a/1"), q("a", "http://a/2")}, nil) {
		t.Fatal("setup batch not applied")
	}
	first := mustPop(t, s, p, issue("a", "t1"))
	if len(first) != 1 {
		t.Fatalf("setup pop: %v", first)
	}
	req := store.StepRequest{
		Seq: 2, Enqueue: []store.Queued{q("b", "http://b/1")}, Done: []store.Done{{Host: "a", TaskID: "t1"}},
		Applied: []uint64{40, 41}, Issue: []store.Issue{issue("a", "t2"), issue("b", "t3")},
	}
	res, err := store.Step(ctx, s, p, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Applied || len(res.Tasks) != 2 || res.Tasks[0].Task.URL != "http://a/2" || res.Tasks[1].Task.URL != "http://b/1" {
		t.Fatalf("step: applied %v, tasks %+v", res.Applied, res.Tasks)
	}
	marked, err := s.Applied(ctx, p, []uint64{40, 41, 42})
	if err != nil || !marked[0] || !marked[1] || marked[2] {
		t.Fatalf("intake log after the step: %v, %v", marked, err)
	}
	again, err := store.Step(ctx, s, p, store.StepRequest{Seq: 2, Enqueue: []store.Queued{q("c", "http://c/1")}, Issue: []store.Issue{issue("c", "t4")}})
	if err != nil || again.Applied || len(again.Tasks) != 0 {
		t.Fatalf("replayed step: %+v, %v", again, err)
	}
	st := mustLoad(t, s, p)
	if st.Applied != 2 || len(st.Hosts) != 2 {
		t.Fatalf("after the replay: %s", dump(st))
	}
	wantStats(t, s, []int{p}, store.Stats{Queued: 0, InFlight: 2, Enqueued: 3})
}

// The intake log answers exactly what was marked, per partition, survives a
// reopen, and forgets what the floor passed.
func testIntakeLog(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	got, err := s.Applied(ctx, 3, []uint64{1, 5, 9})
	if err != nil || fmt.Sprint(got) != "[false false false]" {
		t.Fatalf("empty log: %v, %v", got, err)
	}
	if err := s.MarkApplied(ctx, 3, []uint64{5, 9, 12}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkApplied(ctx, 4, []uint64{1}, 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open()
	defer s.Close()
	got, err = s.Applied(ctx, 3, []uint64{1, 5, 9, 10, 12})
	if err != nil || fmt.Sprint(got) != "[false true true false true]" {
		t.Fatalf("after reopen: %v, %v", got, err)
	}
	// Out of order is fine: 7 applied after 12.
	if err := s.MarkApplied(ctx, 3, []uint64{7}, 9); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Applied(ctx, 3, []uint64{5, 7, 9, 12})
	if fmt.Sprint(got) != "[false false false true]" {
		t.Errorf("after floor 9: %v, want only 12 remembered", got)
	}
	if got, _ := s.Applied(ctx, 4, []uint64{1, 12}); fmt.Sprint(got) != "[true false]" {
		t.Errorf("partition 4: %v", got)
	}
}

func testFIFO(t *testing.T, open Opener) {
	s := open()
	const p = 1
	mustApply(t, s, p, 1, []store.Queued{
		{Host: "a", Link: messages.Link{URL: "http://a/1", Depth: 1, Hops: 1}},
		q("b", "http://b/1"),
		q("a", "http://a/2"),
	}, nil)
	mustApply(t, s, p, 2, []store.Queued{q("a", "http://a/3")}, nil)

	iss := issue("a", "t-a1")
	got := mustPop(t, s, p, iss)
	if len(got) != 1 {
		t.Fatalf("Pop = %s", dump(got))
	}
	want := store.InFlight{
		Task: messages.FetchTask{
			V: messages.Version, ID: "t-a1", Partition: p, Host: "a", URL: "http://a/1",
			Depth: 1, Hops: 1, Attempt: 1, IssuedAt: iss.IssuedAt, Deadline: iss.Deadline,
		},
		LeaseUntil: iss.LeaseUntil,
	}
	if dump(got[0]) != dump(want) {
		t.Errorf("task = %s\nwant   %s", dump(got[0]), dump(want))
	}
	seq := uint64(3)
	done := func(host, id string) {
		mustApply(t, s, p, seq, nil, []store.Done{{Host: host, TaskID: id}})
		seq++
	}
	done("a", "t-a1")
	var urls []string
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		in := mustPop(t, s, p, issue("a", id))
		if len(in) == 0 {
			break
		}
		urls = append(urls, in[0].Task.URL)
		done("a", id)
	}
	if want := []string{"http://a/2", "http://a/3"}; !slices.Equal(urls, want) {
		t.Errorf("host a popped %v, want %v", urls, want)
	}
	if in := mustPop(t, s, p, issue("b", "tb")); len(in) != 1 || in[0].Task.URL != "http://b/1" {
		t.Errorf("host b: %s", dump(in))
	}
}

// A host's queue is breadth-first by depth without scores, best-first with
// them, arrival order among equals; a retried URL goes first among its rank.
func testOrder(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const p = 2
	link := func(url string, depth int, score float64) store.Queued {
		return store.Queued{Host: "a", Link: messages.Link{URL: url, Depth: depth, Score: score}}
	}
	mustApply(t, s, p, 1, []store.Queued{link("d3", 3, 0), link("d1a", 1, 0), link("d2", 2, 0), link("d1b", 1, 0), link("d0", 0, 0)}, nil)
	seq := uint64(2)
	if got, want := popAll(t, s, p, "a", &seq), []string{"d0", "d1a", "d1b", "d2", "d3"}; !slices.Equal(got, want) {
		t.Errorf("breadth-first order %v, want %v", got, want)
	}
	mustApply(t, s, p, seq, []store.Queued{link("s0.1", 1, 0.1), link("s2", 5, 2), link("s0.5", 1, 0.5), link("s2b", 4, 2), link("neg", 0, -1), link("s0.5b", 1, 0.5)}, nil)
	seq++
	if got, want := popAll(t, s, p, "a", &seq), []string{"s2b", "s2", "s0.5", "s0.5b", "s0.1", "neg"}; !slices.Equal(got, want) {
		t.Errorf("best-first order %v, want %v", got, want)
	}
	// An expired task comes back ahead of URLs of its rank, behind better ones.
	mustApply(t, s, p, seq, []store.Queued{link("x1", 1, 1), link("y1", 1, 1), link("z3", 1, 3)}, nil)
	seq++
	in := mustPop(t, s, p, issue("a", "tz"))
	if len(in) != 1 || in[0].Task.URL != "z3" || in[0].Task.Score != 3 {
		t.Fatalf("popped %s", dump(in))
	}
	mustApply(t, s, p, seq, []store.Queued{link("w5", 1, 5)}, nil)
	seq++
	in = mustPop(t, s, p, issue("a", "tw"))
	if _, err := s.Expire(ctx, p, "a", "tw", 3); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, p, seq, nil, []store.Done{{Host: "a", TaskID: "tz"}})
	seq++
	if got, want := popAll(t, s, p, "a", &seq), []string{"w5", "x1", "y1"}; !slices.Equal(got, want) {
		t.Errorf("after expire %v, want %v", got, want)
	}
	_ = in
}

// A host that has had HostBudget URLs issued takes no more: its queue is
// dropped at the next pop and new URLs for it are not queued.
func testHostBudget(t *testing.T, open Opener) {
	s := open()
	s.SetLimits(store.Limits{HostBudget: 3})
	defer s.SetLimits(store.Limits{})
	const p = 3
	var batch []store.Queued
	for i := range 5 {
		batch = append(batch, q("trap", fmt.Sprintf("http://trap/%d", i)), q("ok", fmt.Sprintf("http://ok/%d", i)))
	}
	mustApply(t, s, p, 1, batch[:8], nil)
	seq := uint64(2)
	if got := popAll(t, s, p, "trap", &seq); len(got) != 3 {
		t.Errorf("trap host issued %v, want 3 URLs", got)
	}
	mustApply(t, s, p, seq, batch[8:], nil) // trap/4 is refused at intake
	seq++
	wantStats(t, s, []int{p}, store.Stats{Queued: 5, Enqueued: 9, Dropped: 2})
	if got := popAll(t, s, p, "ok", &seq); len(got) != 3 {
		t.Errorf("ok host issued %v, want 3 URLs", got)
	}
	wantStats(t, s, []int{p}, store.Stats{Queued: 0, Enqueued: 9, Dropped: 4})
	if got := mustStats(t, s, []int{p}).DroppedBudget(); got != 4 {
		t.Errorf("dropped over the budget %d, want 4", got)
	}
	if st := mustLoad(t, s, p); len(st.Hosts) != 0 {
		t.Errorf("hosts left after their budgets: %s", dump(st))
	}
}

// A full host queue keeps its best URLs: the lowest-priority one goes.
func testHostQueueCap(t *testing.T, open Opener) {
	s := open()
	s.SetLimits(store.Limits{HostQueue: 3})
	defer s.SetLimits(store.Limits{})
	const p = 4
	link := func(url string, depth int) store.Queued {
		return store.Queued{Host: "a", Link: messages.Link{URL: url, Depth: depth}}
	}
	mustApply(t, s, p, 1, []store.Queued{link("d2", 2), link("d1", 1), link("d3", 3), link("d0", 0), link("d4", 4)}, nil)
	wantStats(t, s, []int{p}, store.Stats{Queued: 3, Enqueued: 3, Dropped: 2, DroppedQueue: 2})
	if got := mustStats(t, s, []int{p}).DroppedBudget(); got != 0 {
		t.Errorf("dropped over the budget %d, want 0", got)
	}
	seq := uint64(2)
	if got, want := popAll(t, s, p, "a", &seq), []string{"d0", "d1", "d2"}; !slices.Equal(got, want) {
		t.Errorf("capped queue %v, want %v", got, want)
	}
}

// A host's politeness time outlives a restart of its frontier, even when the
// host has nothing queued; times in the past are forgotten.
func testNotBefore(t *testing.T, open Opener) {
	s := open()
	const p = 5
	mustApply(t, s, p, 1, []store.Queued{q("a", "http://a/1"), q("b", "http://b/1"), q("c", "http://c/1"), q("c", "http://c/2")}, nil)
	for _, h := range []string{"a", "b", "c"} {
		mustPop(t, s, p, issue(h, "t-"+h))
	}
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	mustApply(t, s, p, 2, nil, []store.Done{
		{Host: "a", TaskID: "t-a", NotBefore: later},
		{Host: "b", TaskID: "t-b", NotBefore: time.Now().Add(-time.Minute)},
		{Host: "c", TaskID: "t-c", NotBefore: later},
	})
	st := mustLoad(t, s, p)
	got := map[string]store.HostState{}
	for _, h := range st.Hosts {
		got[h.Host] = h
	}
	if len(got) != 2 || !got["a"].NotBefore.Equal(later) || got["a"].Queued != 0 || !got["c"].NotBefore.Equal(later) || got["c"].Queued != 1 {
		t.Errorf("Load = %s; want a (nothing queued) and c (1 queued) resting until %v, b forgotten", dump(st), later)
	}
	// Issuing the host clears its time.
	mustPop(t, s, p, issue("c", "t-c2"))
	st = mustLoad(t, s, p)
	for _, h := range st.Hosts {
		if h.Host == "c" && !h.NotBefore.IsZero() {
			t.Errorf("c still resting after it was issued: %s", dump(h))
		}
	}
}

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

func testPopSkips(t *testing.T, open Opener) {
	s := open()
	const p = 4
	mustApply(t, s, p, 1, []store.Queued{q("a", "http://a/1"), q("a", "http://a/2"), q("c", "http://c/1"), q("c", "http://c/2")}, nil)
	mustPop(t, s, p, issue("c", "tc"))
	if got := mustPop(t, s, p); len(got) != 0 {
		t.Errorf("Pop() = %s", dump(got))
	}
	got := mustPop(t, s, p, issue("b", "tb"), issue("a", "ta"), issue("c", "tc2"), issue("a", "ta2"), issue("", "te"))
	if len(got) != 1 || got[0].Task.ID != "ta" || got[0].Task.URL != "http://a/1" {
		t.Errorf("Pop = %s, want only a/1 as ta", dump(got))
	}
	wantStats(t, s, []int{p}, store.Stats{Queued: 2, InFlight: 2, Enqueued: 4})
	st := mustLoad(t, s, p)
	if len(st.Hosts) != 2 || st.Hosts[1].InFlight.Task.ID != "tc" || st.Hosts[1].Queued != 1 {
		t.Errorf("Load = %s", dump(st))
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

func q(host, url string) store.Queued {
	return store.Queued{Host: host, Link: messages.Link{URL: url, Depth: 1}, Attempt: 1}
}

func issue(host, id string) store.Issue {
	return store.Issue{Host: host, TaskID: id, IssuedAt: t0, Deadline: t0.Add(time.Minute), LeaseUntil: t0.Add(2 * time.Minute)}
}

func mustSeen(t testing.TB, s store.Store, p int, fps []uint64) []bool {
	t.Helper()
	got, err := s.Seen(context.Background(), p, fps)
	if err != nil {
		t.Fatalf("Seen: %v", err)
	}
	if len(got) != len(fps) {
		t.Fatalf("Seen: %d answers for %d fingerprints", len(got), len(fps))
	}
	return got
}

func mustCount(t testing.TB, s store.Store, p int) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), p)
	if err != nil {
		t.Fatalf("Count(%d): %v", p, err)
	}
	return n
}

// scanChunks returns what Scan hands fn, chunk by chunk.
func scanChunks(t testing.TB, s store.Store, p int) [][]uint64 {
	t.Helper()
	var chunks [][]uint64
	err := s.Scan(context.Background(), p, func(fps []uint64) error {
		chunks = append(chunks, fps)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%d): %v", p, err)
	}
	return chunks
}

func mustApply(t testing.TB, s store.Store, p int, seq uint64, enq []store.Queued, done []store.Done) bool {
	t.Helper()
	ok, err := s.Apply(context.Background(), p, seq, enq, done)
	if err != nil {
		t.Fatalf("Apply(p%d, seq %d): %v", p, seq, err)
	}
	return ok
}

func mustPop(t testing.TB, s store.Store, p int, reqs ...store.Issue) []store.InFlight {
	t.Helper()
	got, err := s.Pop(context.Background(), p, reqs)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return got
}

func mustLoad(t testing.TB, s store.Store, p int) store.PartitionState {
	t.Helper()
	st, err := s.Load(context.Background(), p)
	if err != nil {
		t.Fatalf("Load(%d): %v", p, err)
	}
	return st
}

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

// dump renders a value as JSON, for comparisons and messages.
func dump(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(data)
}

// popAll pops host's queue to the end, freeing the host after each task.
func popAll(t *testing.T, s store.Store, p int, host string, seq *uint64) []string {
	t.Helper()
	var urls []string
	for i := range 1000 {
		id := fmt.Sprintf("%s-%d-%d", host, *seq, i)
		in := mustPop(t, s, p, issue(host, id))
		if len(in) == 0 {
			return urls
		}
		urls = append(urls, in[0].Task.URL)
		mustApply(t, s, p, *seq, nil, []store.Done{{Host: host, TaskID: id}})
		*seq++
	}
	t.Fatal("queue never ran dry")
	return nil
}
