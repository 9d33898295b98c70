package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// TestRedisSplicedInFlight: the in-flight entry the pop script splices from
// a queue entry is, byte for byte, the one Go would write (json.Marshal of
// newInFlight), for links with and without hops and score and URLs that JSON
// escapes; a head in another form (not written by this build) and an issue
// without a task ID (derived) are popped by popScript, in request order. On
// miniredis too: its Lua is not Redis's.
func TestRedisSplicedInFlight(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testRedisSplicedInFlight(t, redisAddr(t)) })
	t.Run("miniredis", func(t *testing.T) { testRedisSplicedInFlight(t, miniredis.RunT(t).Addr()) })
}

func testRedisSplicedInFlight(t *testing.T, addr string) {
	s := redisBackend([]string{addr})(t)().(*Redis)
	ctx := context.Background()
	const p = 5
	links := map[string]messages.Link{
		"a.example":       {URL: "http://a.example/plain", Depth: 3},
		"b.example":       {URL: `http://b.example/q?x="},"attempt":7}&y=<é>`, Depth: 0, Hops: 2},
		"c.example":       {URL: "http://c.example/s", Depth: 12, Score: 0.123456789},
		"d.example":       {URL: "http://d.example/neg", Depth: 1, Score: -1e-9, Hops: 1},
		"odd.example":     {URL: "http://odd.example/", Depth: 1},
		"e.example":       {URL: "http://e.example/derived", Depth: 1},
		`q"uo\te.example`: {URL: "http://x/", Depth: 1},
	}
	var enq []Queued
	for h, l := range links {
		enq = append(enq, Queued{Host: h, Link: l, Attempt: 2})
	}
	mustApply(t, s, p, 1, enq, nil)
	// odd.example's entry in another (valid) JSON form: spaces.
	qk := s.queueKey(p, "odd.example")
	head := s.c.ZRange(ctx, qk, 0, 0).Val()[0]
	odd := head[:queueMemberPrefix] + `{ "host": "odd.example", "link": {"url": "http://odd.example/", "depth": 1}, "attempt": 2 }`
	if err := s.c.ZRem(ctx, qk, head).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.ZAdd(ctx, qk, redis.Z{Member: odd}).Err(); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)
	var reqs []Issue
	for _, h := range []string{"a.example", "odd.example", "b.example", "e.example", "c.example", "d.example", `q"uo\te.example`, "none.example"} {
		is := Issue{Host: h, TaskID: "task-" + h, IssuedAt: at, Deadline: at.Add(time.Minute), LeaseUntil: at.Add(time.Hour)}
		if h == "c.example" {
			is.NotBefore = at.Add(time.Second)
		}
		if h == "e.example" {
			is.TaskID = ""
		}
		reqs = append(reqs, is)
	}
	tasks, err := s.Pop(ctx, p, reqs)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, in := range tasks {
		order = append(order, in.Task.Host)
		want, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.c.HGet(ctx, s.inflightKey(p), in.Task.Host).Val(); got != string(want) {
			t.Errorf("%s: stored in-flight entry\n%s\nwant\n%s", in.Task.Host, got, want)
		}
		if l := links[in.Task.Host]; in.Task.URL != l.URL || in.Task.Depth != l.Depth || in.Task.Hops != l.Hops || in.Task.Score != l.Score || in.Task.Attempt != 2 {
			t.Errorf("%s: task %+v from link %+v", in.Task.Host, in.Task, l)
		}
	}
	if got, want := strings.Join(order, " "), `a.example odd.example b.example e.example c.example d.example q"uo\te.example`; got != want {
		t.Errorf("tasks in order %s, want %s", got, want)
	}
	if id := tasks[3].Task.ID; !strings.HasPrefix(id, "p5-") {
		t.Errorf("e.example: task ID %q, want one derived from its entry", id)
	}
	wantStats(t, s, []int{p}, Stats{Queued: 0, InFlight: 7, Enqueued: 7})
	st := mustLoad(t, s, p)
	for _, hs := range st.Hosts {
		if hs.InFlight == nil || hs.InFlight.Task.ID == "" {
			t.Errorf("loaded %s without its task: %+v", hs.Host, hs)
		}
	}
}

// TestRedisReservedNext is TestReservedNext on Redis: a pop with a derived
// task ID reserves the host's next entry; the step that records it pops
// exactly that entry under the reserved ID, the same field for field as the
// task published from the reservation; the replay (the same step without
// the reservation, on a store in the state before it) derives the same ID;
// the host's budget stops the reservation; a gone entry pops nothing.
func TestRedisReservedNext(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testRedisReservedNext(t, redisAddr(t)) })
	t.Run("miniredis", func(t *testing.T) { testRedisReservedNext(t, miniredis.RunT(t).Addr()) })
}

func testRedisReservedNext(t *testing.T, addr string) {
	ctx := context.Background()
	const p, host = 3, "a.test"
	link := func(n int) Queued {
		return Queued{Host: host, Link: messages.Link{URL: fmt.Sprintf("http://a.test/%d", n), Depth: 1}, Attempt: 1}
	}
	now := time.Now().Truncate(time.Millisecond)
	iss := Issue{Host: host, IssuedAt: now, Deadline: now.Add(time.Minute), LeaseUntil: now.Add(2 * time.Minute)}
	// Two stores in the same state: the second is the replay's.
	open := func() (*Redis, InFlight) {
		s := redisBackend([]string{addr})(t)().(*Redis)
		s.SetLimits(Limits{HostBudget: 2})
		mustApply(t, s, p, 1, []Queued{link(1), link(2), link(3), link(4)}, nil)
		tasks, err := s.Pop(ctx, p, []Issue{iss})
		if err != nil || len(tasks) != 1 || tasks[0].Next == nil {
			t.Fatalf("pop: %v %v", tasks, err)
		}
		return s, tasks[0]
	}
	s, first := open()
	replay, _ := open()
	next := first.Next
	if next.Queued.Link.URL != "http://a.test/2" {
		t.Fatalf("reserved %s, want http://a.test/2", next.Queued.Link.URL)
	}
	if l := (messages.Link{URL: "http://a.test/shallow", Depth: 0}); !next.Outranked(l) {
		t.Error("a URL at depth 0 does not outrank the reservation at depth 1")
	}
	if l := (messages.Link{URL: "http://a.test/same", Depth: 1}); next.Outranked(l) {
		t.Error("a URL of the same depth outranks the reservation")
	}
	done := []Done{{Host: host, TaskID: first.Task.ID}}
	want := stepReserved(t, s, p, iss, next, done)
	st, err := s.Load(ctx, p)
	if err != nil || len(st.Hosts) != 1 || st.Hosts[0].InFlight == nil || dump(*st.Hosts[0].InFlight) != dump(want) {
		t.Errorf("in flight in the store: %+v %v, want %s", st.Hosts, err, dump(want))
	}
	again, err := replay.Step(ctx, p, StepRequest{Seq: 2, Done: done, Issue: []Issue{iss}})
	if err != nil || len(again.Tasks) != 1 || again.Tasks[0].Task.ID != want.Task.ID {
		t.Errorf("replayed step: %v %v, want task %s", again, err, want.Task.ID)
	}
	// A reserved entry gone: nothing popped.
	s.SetLimits(Limits{})
	gone := iss
	gone.Next = &Next{Key: []byte(host + "\x00" + strings.Repeat("0", queueMemberPrefix)), TaskID: "x"}
	res, err := s.Step(ctx, p, StepRequest{Seq: 3, Done: []Done{{Host: host, TaskID: want.Task.ID}}, Issue: []Issue{gone}})
	if err != nil || len(res.Tasks) != 0 {
		t.Errorf("step with a gone reservation: %v %v", res, err)
	}
}
