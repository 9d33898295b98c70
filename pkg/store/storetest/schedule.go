package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// revisitOf is u's schedule entry due at due, with an ETag to carry.
func revisitOf(host, u, etag string, due time.Time) *store.Scheduled {
	return &store.Scheduled{Due: due, Queued: store.Queued{Host: host,
		Link: messages.Link{URL: u, Depth: 1, Revisit: &messages.Revisit{Visits: 1, ETag: etag, Interval: time.Hour}}}}
}

// The revisit schedule: a done report's entry is scheduled in its write
// (only when the done frees its host), read back by Due in time order,
// counted by Stats, replaced when the URL is scheduled again, kept across a
// reopen, and moved into the host's queue by a step's Promote, once, with
// its record on the task it gives.
func testRevisitSchedule(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const p = 2
	now := time.Now()
	if !mustApply(t, s, p, 1, []store.Queued{q("a", "http://a/1"), q("b", "http://b/1")}, nil) {
		t.Fatal("setup batch not applied")
	}
	if got := mustPop(t, s, p, issue("a", "t1"), issue("b", "t2")); len(got) != 2 {
		t.Fatalf("setup pop: %s", dump(got))
	}
	soon, later := now.Add(-time.Minute).Truncate(time.Millisecond), now.Add(30*time.Minute).Truncate(time.Millisecond)
	done := []store.Done{
		{Host: "a", TaskID: "t1", Revisit: revisitOf("a", "http://a/1", `"v1"`, later)},
		{Host: "b", TaskID: "t2", Revisit: revisitOf("b", "http://b/1", `"w1"`, soon)},
	}
	if !mustApply(t, s, p, 2, nil, done) {
		t.Fatal("done batch not applied")
	}
	wantStats(t, s, []int{p}, store.Stats{Enqueued: 2, Scheduled: 2, DueNow: 1, DueHour: 2})

	// Scheduling a URL again replaces its entry: a now due sooner.
	if !mustApply(t, s, p, 3, nil, []store.Done{{Host: "a", TaskID: "t1", Revisit: revisitOf("a", "http://a/1", `"v2"`, soon.Add(time.Millisecond))}}) {
		t.Fatal("stale done batch not applied")
	}
	due, err := s.Due(ctx, p, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The stale done (t1 is no longer in flight) scheduled nothing on
	// bbolt; Redis schedules beside its script, so either is allowed, but
	// never twice.
	if len(due) < 1 || len(due) > 2 || due[0].Queued.Link.URL != "http://b/1" || !due[0].Due.Equal(soon) ||
		due[0].Queued.Link.Revisit == nil || due[0].Queued.Link.Revisit.ETag != `"w1"` {
		t.Fatalf("Due(now) = %s", dump(due))
	}
	if one, err := s.Due(ctx, p, now, 1); err != nil || len(one) != 1 {
		t.Fatalf("Due(now, 1) = %s, %v", dump(one), err)
	}
	if none, err := s.Due(ctx, p, soon.Add(-time.Second), 10); err != nil || len(none) != 0 {
		t.Fatalf("Due before anything is due = %s, %v", dump(none), err)
	}
	if empty, err := s.Due(ctx, p+1, now.Add(time.Hour), 10); err != nil || len(empty) != 0 {
		t.Fatalf("Due of another partition = %s, %v", dump(empty), err)
	}

	s.Close()
	s = open()
	defer s.Close()
	due, err = s.Due(ctx, p, now.Add(time.Hour), 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("after a reopen, Due(in an hour) = %s, %v", dump(due), err)
	}

	// Promote queues the due entries, outside the host limits, and pops.
	s.SetLimits(store.Limits{HostQueue: 1})
	res, err := store.Step(ctx, s, p, store.StepRequest{Seq: 4, Promote: due, Issue: []store.Issue{issue("b", "t3")}})
	if err != nil || !res.Applied || len(res.Tasks) != 1 {
		t.Fatalf("promote step: %s, %v", dump(res), err)
	}
	task := res.Tasks[0].Task
	if task.URL != "http://b/1" || task.Revisit == nil || task.Revisit.ETag != `"w1"` || task.Revisit.Visits != 1 {
		t.Fatalf("the revisit's task lost its record: %s", dump(task))
	}
	wantStats(t, s, []int{p}, store.Stats{Queued: 1, InFlight: 1, Enqueued: 4})
	// A retried step finds the entries gone and queues nothing twice.
	if res, err := store.Step(ctx, s, p, store.StepRequest{Seq: 5, Promote: due}); err != nil || !res.Applied {
		t.Fatalf("repeated promote: %s, %v", dump(res), err)
	}
	wantStats(t, s, []int{p}, store.Stats{Queued: 1, InFlight: 1, Enqueued: 4})
	if left, err := s.Due(ctx, p, now.Add(time.Hour), 10); err != nil || len(left) != 0 {
		t.Fatalf("Due after the promote = %s, %v", dump(left), err)
	}
}
