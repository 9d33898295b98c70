package storetest

// The host queues: applying intake, steps, order, caps and popping.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

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
	for p, want := range map[int]uint64{3: 12, 4: 1, 5: 0} {
		if last, err := s.LastApplied(ctx, p); err != nil || last != want {
			t.Errorf("partition %d: last applied %d (%v), want %d", p, last, err, want)
		}
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
	if last, err := s.LastApplied(ctx, 3); err != nil || last != 12 {
		t.Errorf("last applied after floor 9: %d (%v), want 12", last, err)
	}
	// A large sequence keeps its value (Redis scores are doubles, exact to 2^53).
	if err := s.MarkApplied(ctx, 6, []uint64{1 << 40}, 0); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.LastApplied(ctx, 6); last != 1<<40 {
		t.Errorf("last applied %d, want %d", last, uint64(1)<<40)
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

func q(host, url string) store.Queued {
	return store.Queued{Host: host, Link: messages.Link{URL: url, Depth: 1}, Attempt: 1}
}

func issue(host, id string) store.Issue {
	return store.Issue{Host: host, TaskID: id, IssuedAt: t0, Deadline: t0.Add(time.Minute), LeaseUntil: t0.Add(2 * time.Minute)}
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
