package crawlstate_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// The block keeper publishes once into a work stream after its work stops.
// Two idle snapshots around that keeper still end the crawl; any other
// message between them does not.
func TestFinishedLooksPastTheBlockKeeper(t *testing.T) {
	idle := func(fetch crawlstate.StreamState) crawlstate.Snapshot { return crawlstate.Snapshot{Fetch: fetch} }
	prev := idle(crawlstate.StreamState{LastSeq: 10})
	for _, c := range []struct {
		name  string
		later crawlstate.StreamState
		want  bool
	}{
		{"nothing published", crawlstate.StreamState{LastSeq: 10}, true},
		{"one keeper", crawlstate.StreamState{LastSeq: 11, KeeperSeq: 11}, true},
		{"a task published and acked, the older keeper left", crawlstate.StreamState{LastSeq: 11, KeeperSeq: 9}, false},
		{"a task and a keeper", crawlstate.StreamState{LastSeq: 12, KeeperSeq: 12}, false},
		{"a task, no keeper", crawlstate.StreamState{LastSeq: 11}, false},
	} {
		if got := crawlstate.Finished(prev, idle(c.later)); got != c.want {
			t.Errorf("%s: finished %v, want %v", c.name, got, c.want)
		}
	}
}

// A snapshot reads the newest keeper of a work stream that holds no work,
// and the crawl is seen finished across it.
func TestSnapshotReadsTheKeeperOfAQuietStream(t *testing.T) {
	js, names := testbus.Start(t, 1)
	st := openStore(t)
	ctx := context.Background()
	w := &crawlstate.Watcher{JS: js, Names: names, Store: st, Partitions: []int{0}}
	testbus.Publish(t, js, names.Fetch(0), []byte("task"))
	if testbus.Next(t, js, names.StreamFetch(), names.ConsumerFetcher(), 5*time.Second) == nil { // acks it
		t.Fatal("no task")
	}
	var before crawlstate.Snapshot
	var err error
	testutil.Eventually(t, 5*time.Second, "the task acked", func() bool {
		before, err = w.Snapshot(ctx)
		return err == nil && before.Idle()
	})
	stop := bus.KeepBlock(ctx, js, names.StreamFetch(), names.Keeper(names.StreamFetch()), nil)
	var after crawlstate.Snapshot
	testutil.Eventually(t, 5*time.Second, "the keeper in the fetch stream", func() bool {
		after, err = w.Snapshot(ctx)
		return err == nil && after.Fetch.LastSeq > before.Fetch.LastSeq
	})
	stop()
	if after.Fetch.Msgs != 0 || after.Fetch.KeeperSeq != after.Fetch.LastSeq {
		t.Fatalf("fetch stream after its keeper: %+v, want no work and the keeper last", after.Fetch)
	}
	if !crawlstate.Finished(before, after) {
		t.Fatalf("the crawl is not seen finished across the keeper: before %+v, after %+v", before, after)
	}
}

// Near its end a crawl is looked at more often: when what is left could be
// fetched before the next look at the pace of the last one.
func TestNearEnd(t *testing.T) {
	at := func(pages uint64, queued, inFlight int64) crawlstate.Snapshot {
		s := crawlstate.Snapshot{Parsed: crawlstate.StreamState{LastSeq: pages}}
		s.Store.Queued, s.Store.InFlight = queued, inFlight
		return s
	}
	for _, c := range []struct {
		name        string
		prev, later crawlstate.Snapshot
		want        bool
	}{
		{"130 fetched, 43 left", at(500, 170, 1), at(630, 42, 1), true},
		{"130 fetched, 500 left", at(0, 630, 1), at(130, 499, 1), false},
		{"nothing fetched, one in flight", at(10, 0, 1), at(10, 0, 1), true},
		{"nothing fetched, ten queued", at(10, 10, 0), at(10, 10, 0), false},
		{"a large crawl's fast pace, much left", at(0, 5000, 16), at(3000, 2000, 16), false},
	} {
		if got := crawlstate.NearEnd(c.prev, c.later); got != c.want {
			t.Errorf("%s: near end %v, want %v", c.name, got, c.want)
		}
	}
}

// The look after the first one comes soon when the crawl is small: a crawl
// of a few pages is often over before a whole interval, and it used to wait
// it out (100 ms of a 150 ms run). A large crawl looks at its usual pace.
func TestNextLookAfterTheFirst(t *testing.T) {
	const every = 100 * time.Millisecond
	oneSeed := crawlstate.Snapshot{}
	oneSeed.Store.Queued = 1
	large := crawlstate.Snapshot{}
	large.Store.Queued = 5000
	started := crawlstate.Snapshot{Fetch: crawlstate.StreamState{Msgs: 1}} // the seed's task, its host's robots.txt
	started.Store.Queued, started.Store.InFlight = 2, 1
	for _, c := range []struct {
		name string
		prev *crawlstate.Snapshot
		s    crawlstate.Snapshot
		want time.Duration
	}{
		{"first look, one seed queued", nil, oneSeed, 10 * time.Millisecond},
		{"first look, a task out and two queued", nil, started, 10 * time.Millisecond},
		{"first look, 5,000 queued", nil, large, every},
		{"first look, idle", nil, crawlstate.Snapshot{}, time.Millisecond},
		{"idle again, but something moved", &crawlstate.Snapshot{}, crawlstate.Snapshot{Parsed: crawlstate.StreamState{LastSeq: 1}}, 10 * time.Millisecond},
		{"second look, 5,000 still queued", &large, large, every},
	} {
		if got := crawlstate.NextLook(c.prev, c.s, every); got != c.want {
			t.Errorf("%s: next look in %v, want %v", c.name, got, c.want)
		}
	}
}

// Near the end the next look comes when the work left would be done at the
// pace since the last one: a one-host crawl with 43 URLs left at 20 pages in
// 22 ms used to wait a whole interval (NearEnd: 43 > 2 x 20) and saw its end
// ~60 ms late.
func TestNextLookAtThePace(t *testing.T) {
	const every = 100 * time.Millisecond
	t0 := time.Now()
	at := func(d time.Duration, pages uint64, queued, inFlight int64) crawlstate.Snapshot {
		s := crawlstate.Snapshot{At: t0.Add(d), Parsed: crawlstate.StreamState{LastSeq: pages}}
		s.Store.Queued, s.Store.InFlight = queued, inFlight
		return s
	}
	for _, c := range []struct {
		name     string
		prev, s  crawlstate.Snapshot
		from, to time.Duration // the next look falls within
	}{
		{"43 left at 20 pages in 22 ms", at(0, 636, 60, 1), at(22*time.Millisecond, 656, 42, 1), 22 * time.Millisecond, 25 * time.Millisecond},
		{"160 left at 130 pages in 100 ms", at(0, 500, 290, 1), at(100*time.Millisecond, 630, 159, 1), 60 * time.Millisecond, 63 * time.Millisecond},
		{"3 left at 70 pages in 100 ms", at(0, 600, 70, 1), at(100*time.Millisecond, 670, 2, 1), 10 * time.Millisecond, 10 * time.Millisecond},
		{"300 left at 70 pages in 100 ms", at(0, 300, 370, 1), at(100*time.Millisecond, 370, 299, 1), every, every},
		{"5,000 left at a fast pace", at(0, 0, 8000, 16), at(100*time.Millisecond, 3000, 5000, 16), every, every},
		{"one in flight, nothing fetched", at(0, 10, 0, 1), at(10*time.Millisecond, 10, 0, 1), 10 * time.Millisecond, 10 * time.Millisecond},
		{"ten queued, nothing fetched", at(0, 10, 10, 0), at(10*time.Millisecond, 10, 10, 0), every, every},
	} {
		prev := c.prev
		if got := crawlstate.NextLook(&prev, c.s, every); got < c.from || got > c.to {
			t.Errorf("%s: next look in %v, want %v to %v", c.name, got, c.from, c.to)
		}
	}
}

// A Wake after which the store holds nothing queued or in flight makes Wait
// look at once, not at its next interval (an hour here); a Wake while the
// store still holds work does not. A hundred tasks in flight: with less
// left, Wait looks often anyway, as near a crawl's end.
func TestWaitLooksOnAWakeOnceTheStoreIsIdle(t *testing.T) {
	js, names := testbus.Start(t, 1)
	st := openStore(t)
	ctx := context.Background()
	var queued []store.Queued
	var issues []store.Issue
	var done []store.Done
	now := time.Now()
	for i := range 100 {
		host := fmt.Sprintf("h%d.test", i)
		queued = append(queued, store.Queued{Host: host, Link: messages.Link{URL: "http://" + host + "/"}, Attempt: 1})
		id := fmt.Sprintf("t%d", i)
		issues = append(issues, store.Issue{Host: host, TaskID: id, IssuedAt: now, Deadline: now.Add(time.Minute), LeaseUntil: now.Add(time.Minute)})
		done = append(done, store.Done{Host: host, TaskID: id})
	}
	if _, err := st.Apply(ctx, 0, 1, queued, nil); err != nil {
		t.Fatal(err)
	}
	if tasks, err := st.Pop(ctx, 0, issues); err != nil || len(tasks) != len(issues) {
		t.Fatalf("pop: %v, %d tasks", err, len(tasks))
	}
	wake := make(chan struct{}, 1)
	nudge := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	w := &crawlstate.Watcher{JS: js, Names: names, Store: st, Partitions: []int{0}, Wake: wake}
	looks := make(chan crawlstate.Snapshot, 16)
	ended := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, err := w.Wait(ctx, time.Hour, func(s crawlstate.Snapshot) { looks <- s })
		ended <- err
	}()
	if s := <-looks; s.Idle() {
		t.Fatalf("first look idle with tasks in flight: %+v", s.Store)
	}
	nudge() // tasks in flight: no look
	select {
	case s := <-looks:
		t.Fatalf("looked on a wake with tasks in flight: %+v", s.Store)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := st.Apply(ctx, 0, 2, nil, done); err != nil {
		t.Fatal(err)
	}
	nudge()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not end on the wake after the tasks were done")
	}
}

// openStore opens a bbolt store in the test's directory, closed with it.
func openStore(t testing.TB) *store.Bolt {
	t.Helper()
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkSnapshot: one look at a crawl (its streams, the parser's
// consumer, the store) on an embedded server, as `trawler run`'s end
// watcher takes two of at the end of every crawl.
func BenchmarkSnapshot(b *testing.B) {
	js, names := testbus.Start(b, 4)
	w := &crawlstate.Watcher{JS: js, Names: names, Store: openStore(b), Partitions: []int{0, 1, 2, 3}}
	ctx := context.Background()
	for b.Loop() {
		if _, err := w.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
