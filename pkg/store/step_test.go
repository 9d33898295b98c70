package store

import (
	"context"
	"testing"
)

// testStep: a step applies its batch, marks its sequences and pops the due
// hosts (the host its done freed included) in one go; a replayed step
// changes nothing and says so.
func testStep(t *testing.T, open opener) {
	s := open()
	ctx := context.Background()
	const p = 3
	if !mustApply(t, s, p, 1, []Queued{q("a", "http://a/1"), q("a", "http://a/2")}, nil) {
		t.Fatal("setup batch not applied")
	}
	first := mustPop(t, s, p, issue("a", "t1"))
	if len(first) != 1 {
		t.Fatalf("setup pop: %v", first)
	}
	req := StepRequest{
		Seq: 2, Enqueue: []Queued{q("b", "http://b/1")}, Done: []Done{{Host: "a", TaskID: "t1"}},
		Applied: []uint64{40, 41}, Issue: []Issue{issue("a", "t2"), issue("b", "t3")},
	}
	res, err := Step(ctx, s, p, req)
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
	again, err := Step(ctx, s, p, StepRequest{Seq: 2, Enqueue: []Queued{q("c", "http://c/1")}, Issue: []Issue{issue("c", "t4")}})
	if err != nil || again.Applied || len(again.Tasks) != 0 {
		t.Fatalf("replayed step: %+v, %v", again, err)
	}
	st := mustLoad(t, s, p)
	if st.Applied != 2 || len(st.Hosts) != 2 {
		t.Fatalf("after the replay: %s", dump(st))
	}
	wantStats(t, s, []int{p}, Stats{Queued: 0, InFlight: 2, Enqueued: 3})
}
