package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
)

func openGroupTest(t *testing.T, interval time.Duration) *Bolt {
	t.Helper()
	b, err := OpenBoltWith(filepath.Join(t.TempDir(), "g.db"), BoltOptions{CommitInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// A chain of dependent writes (each waits for the previous) is not paced:
// it pays at most one interval per probeEvery, not one per write.
func TestGroupCommitChainIsNotPaced(t *testing.T) {
	const interval = 300 * time.Millisecond
	b := openGroupTest(t, interval)
	ctx := context.Background()
	start := time.Now()
	const n = 40
	for i := range n {
		if err := b.Record(ctx, 0, []uint64{uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Paced, the chain would take n intervals (12 s); unpaced, one trial of
	// pacing (an interval) plus n commits. Half of the paced time tells the
	// two apart however slow the disk and the machine are.
	if took := time.Since(start); took > n*interval/2 {
		t.Errorf("%d chained writes took %s", n, took)
	}
	if c := b.Commits(); c != n {
		t.Errorf("%d commits for %d chained writes", c, n)
	}
}

// Many independent writers are paced: at most about one commit per
// interval, each shared by many writes.
func TestGroupCommitPacesConcurrentWriters(t *testing.T) {
	const interval = 40 * time.Millisecond
	writeConcurrently(t, openGroupTest(t, interval), interval)
}

// Writers that queue up behind unpaced commits call a trial of pacing at
// once, however late failed trials had put off the next one (the start of
// a crawl: one host found, a chain of writes; then many hosts at once).
func TestGroupCommitQueuedWritersCallATrial(t *testing.T) {
	const interval = 40 * time.Millisecond
	b := openGroupTest(t, interval)
	b.writes.probeAt, b.writes.probeGap = time.Now().Add(time.Hour), maxProbeEvery
	writeConcurrently(t, b, interval)
}

// writeConcurrently has 16 writers write for 1.2 s and checks that their
// writes were paced.
func writeConcurrently(t *testing.T, b *Bolt, interval time.Duration) {
	t.Helper()
	ctx := context.Background()
	const writers, run = 16, 1200 * time.Millisecond
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				if err := b.Record(ctx, w, []uint64{uint64(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	commits, writes := b.Commits(), b.Writes()
	t.Logf("%d writes in %d commits over %s", writes, commits, run)
	// The unpaced trial of the first moments, then one per interval.
	if max := int64(run/interval) + 2*writers; commits > max {
		t.Errorf("%d commits, want at most %d", commits, max)
	}
	if writes < 4*commits {
		t.Errorf("%.1f writes per commit, want groups", float64(writes)/float64(commits))
	}
}

// A failing or panicking function fails alone; the rest of its group
// commits.
func TestGroupCommitFailureIsolation(t *testing.T) {
	b := openGroupTest(t, 20*time.Millisecond)
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	bad := errors.New("bad")
	var wg sync.WaitGroup
	errs := make([]error, 30)
	for i := range errs {
		wg.Go(func() {
			errs[i] = b.update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("t"))
				if err != nil {
					return err
				}
				if err := bk.Put(key(i), []byte("v")); err != nil {
					return err
				}
				switch i % 10 {
				case 3:
					return bad
				case 7:
					panic("boom")
				}
				return nil
			})
		})
	}
	wg.Wait()
	err := b.view(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte("t"))
		for i, e := range errs {
			got := bk != nil && bk.Get(key(i)) != nil
			switch i % 10 {
			case 3:
				if !errors.Is(e, bad) || got {
					t.Errorf("write %d: err %v, stored %v; want its error, nothing stored", i, e, got)
				}
			case 7:
				if e == nil || !strings.Contains(e.Error(), "boom") || got {
					t.Errorf("write %d: err %v, stored %v; want the panic as its error, nothing stored", i, e, got)
				}
			default:
				if e != nil || !got {
					t.Errorf("write %d: err %v, stored %v", i, e, got)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Close does not leave writes waiting out a long interval: it commits them
// at once; later writes get ErrClosed.
func TestGroupCommitCloseCommitsWaitingWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	b, err := OpenBoltWith(path, BoltOptions{CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Record(ctx, 0, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	// The next writes come right after a commit: they try pacing and wait
	// for the interval, an hour.
	errs := make(chan error, 8)
	for w := range 8 {
		go func() { errs <- b.Record(ctx, w, []uint64{2}) }()
	}
	waitPending(t, b.writes, 8)
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %s", took)
	}
	acked := 0
	for range 8 {
		if err := <-errs; err == nil {
			acked++
		} else if !errors.Is(err, ErrClosed) {
			t.Errorf("write during Close: %v", err)
		}
	}
	if err := b.Record(ctx, 0, []uint64{3}); !errors.Is(err, ErrClosed) {
		t.Errorf("Record after Close: %v, want ErrClosed", err)
	}
	b2, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	n := 0
	for w := range 8 {
		if mustSeen(t, b2, w, []uint64{2})[0] {
			n++
		}
	}
	if n < acked {
		t.Errorf("%d writes acknowledged, %d stored", acked, n)
	}
}

// kill -9 loses no acknowledged write: a child process writes from several
// goroutines and prints each write once Record returned; after SIGKILL,
// every printed write is in the file.
func TestGroupCommitKill9KeepsAcknowledgedWrites(t *testing.T) {
	if path := os.Getenv("TRAWLER_GROUPCOMMIT_CHILD"); path != "" {
		groupCommitChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "g.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestGroupCommitKill9KeepsAcknowledgedWrites$")
	cmd.Env = append(os.Environ(), "TRAWLER_GROUPCOMMIT_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type write struct{ p, i int }
	var acked []write
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 400 {
		var w write
		if _, err := fmt.Sscan(sc.Text(), &w.p, &w.i); err == nil {
			acked = append(acked, w)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if len(acked) < 400 {
		t.Fatalf("child acknowledged only %d writes", len(acked))
	}
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, w := range acked {
		if !mustSeen(t, b, w.p, []uint64{uint64(w.i)})[0] {
			t.Errorf("acknowledged write %d/%d lost", w.p, w.i)
		}
	}
}

func groupCommitChild(path string) {
	b, err := OpenBoltWith(path, BoltOptions{CommitInterval: 10 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if err := b.Record(context.Background(), p, []uint64{uint64(i)}); err != nil {
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintln(w, p, i)
				w.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// An early write hears its results before its commit, is not paced while
// many writers are, and returns once its group is durable.
func TestGroupCommitEarlyWriteIsNotPaced(t *testing.T) {
	// Long, so that half of it tells paced from unpaced on a loaded
	// machine (under -race, beside other packages, an fsync can take
	// 200 ms).
	const interval = 1500 * time.Millisecond
	b := openGroupTest(t, interval)
	g := b.writes
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 { // enough writers to keep the groups paced
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_ = b.Record(context.Background(), w+1, []uint64{uint64(i)})
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(3 * interval) // pacing engaged: the writers' steady state is what the test measures against
	before := 0              // rounds whose results came before their commit
	for range 5 {
		start := time.Now()
		var ranAt time.Duration
		commitsAtRan := int64(-1)
		err := g.updateEarly(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists([]byte("early"))
			return err
		}, func() {
			ranAt = time.Since(start)
			commitsAtRan = g.commits.Load()
		}, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if ranAt <= 0 || ranAt > interval/2 {
			t.Errorf("early write heard its results after %s (interval %s)", ranAt, interval)
		}
		if took := time.Since(start); took > interval/2 {
			t.Errorf("early write took %s (interval %s)", took, interval)
		}
		if commitsAtRan < 0 {
			t.Error("the early write never heard its results")
		}
		if g.commits.Load() > commitsAtRan {
			before++
		}
	}
	// A caller descheduled while its group commits wakes to both its
	// results and the commit (seen under -race on a busy machine), so one
	// round may hear after the commit; all five do only if results wait for
	// it. (TestGroupCommitEarlyWriteHearsBeforeItsGroupEnds holds a group
	// open to check the order exactly.)
	if before == 0 {
		t.Error("in every round the results came after the commit")
	}
}

// A failing early write is not told it ran, and gets its error.
func TestGroupCommitEarlyWriteFails(t *testing.T) {
	b := openGroupTest(t, -1)
	boom := errors.New("boom")
	ran := false
	if err := b.writes.updateEarly(func(*bolt.Tx) error { return boom }, func() { ran = true }, true, false); !errors.Is(err, boom) || ran {
		t.Fatalf("err %v, ran %v", err, ran)
	}
}

// An early write hears its results as soon as its own function has run, not
// once the rest of its group has: here the write after it in the group
// waits for that. When a later write fails, the group runs again without
// it: the early write runs twice, hears once, and commits.
func TestGroupCommitEarlyWriteHearsBeforeItsGroupEnds(t *testing.T) {
	b := openGroupTest(t, -1)
	g := b.writes
	// Hold the leader in a first group so that the next writes gather.
	release := make(chan struct{})
	first := make(chan error, 1)
	entered := make(chan struct{})
	go func() {
		first <- g.update(func(*bolt.Tx) error { close(entered); <-release; return nil }, false)
	}()
	<-entered

	heard := make(chan struct{})
	var runs, hears int
	var mu sync.Mutex
	early := make(chan error, 1)
	go func() {
		early <- g.updateEarly(func(tx *bolt.Tx) error {
			mu.Lock()
			runs++
			mu.Unlock()
			_, err := tx.CreateBucketIfNotExists([]byte("early"))
			return err
		}, func() {
			mu.Lock()
			hears++
			mu.Unlock()
			close(heard)
		}, true, false)
	}()
	waitPending(t, g, 1)
	boom := errors.New("boom")
	later := make(chan error, 1)
	go func() {
		later <- g.update(func(*bolt.Tx) error {
			select {
			case <-heard: // the early write heard while this one runs
			case <-time.After(5 * time.Second):
				return errors.New("the early write did not hear before its group's next write ended")
			}
			return boom // roll the group back: the early write runs again
		}, false)
	}()
	waitPending(t, g, 2)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-later; !errors.Is(err, boom) {
		t.Fatalf("later write: %v", err)
	}
	if err := <-early; err != nil {
		t.Fatal(err)
	}
	if runs != 2 || hears != 1 {
		t.Fatalf("early write ran %d times, heard %d times; want 2 and 1", runs, hears)
	}
	if err := b.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("early")) == nil {
			return errors.New("the early write was not committed")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (g *groupCommit) setGap(d time.Duration) {
	g.mu.Lock()
	g.gap = d
	g.mu.Unlock()
}

// waitPending waits until n writes wait for the next group.
func waitPending(t *testing.T, g *groupCommit, n int) {
	t.Helper()
	testutil.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		g.mu.Lock()
		got := len(g.pending)
		g.mu.Unlock()
		if got < n {
			return fmt.Errorf("%d writes pending, want %d", got, n)
		}
		return nil
	})
}

// Pop derives a task ID from the queue entry when the Issue has none: the
// same entry popped again (a write lost in a crash, replayed) gets the same
// ID, another entry of the same URL another.
func TestDerivedTaskIDs(t *testing.T) {
	ctx := context.Background()
	b := openGroupTest(t, -1)
	q := Queued{Host: "a.test", Link: messages.Link{URL: "http://a.test/1"}, Attempt: 1}
	if _, err := b.Apply(ctx, 0, 1, []Queued{q, q}, nil); err != nil {
		t.Fatal(err)
	}
	pop := func(b *Bolt) string {
		t.Helper()
		tasks, err := b.Pop(ctx, 0, []Issue{{Host: "a.test"}})
		if err != nil || len(tasks) != 1 {
			t.Fatalf("pop: %v %v", tasks, err)
		}
		return tasks[0].Task.ID
	}
	// A copy of the file is the state a crash would leave before the pop.
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if err := b.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(copyPath, 0o600) }); err != nil {
		t.Fatal(err)
	}
	first := pop(b)
	c, err := OpenBoltWith(copyPath, BoltOptions{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if again := pop(c); again != first || first == "" {
		t.Errorf("replayed pop: ID %q, first %q", again, first)
	}
	if _, err := b.Apply(ctx, 0, 2, nil, []Done{{Host: "a.test", TaskID: first}}); err != nil {
		t.Fatal(err)
	}
	if second := pop(b); second == first {
		t.Errorf("the URL's second entry got the first one's ID %q", first)
	}
}

// TestReservedNext: a pop reads the host's next entry (bbolt, derived IDs);
// the task built from it is the one the recording pop gives, field for
// field; a pop without the reservation (the replay after a crash, which
// has none) gives the same ID; a spent host budget reserves nothing; a
// reserved entry that is gone pops nothing rather than another entry.
func TestReservedNext(t *testing.T) {
	ctx := context.Background()
	b, iss := fourQueued(t, 2)
	tasks, err := b.Pop(ctx, 0, []Issue{iss})
	if err != nil || len(tasks) != 1 || tasks[0].Next == nil {
		t.Fatalf("pop: %v %v", tasks, err)
	}
	next := tasks[0].Next
	if next.Queued.Link.URL != "http://a.test/2" {
		t.Fatalf("reserved %s, want http://a.test/2", next.Queued.Link.URL)
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if err := b.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(copyPath, 0o600) }); err != nil {
		t.Fatal(err)
	}
	done := []Done{{Host: "a.test", TaskID: tasks[0].Task.ID}}
	want := stepReserved(t, b, 0, iss, next, done)
	// The replay: the same step without the reservation.
	c, err := OpenBoltWith(copyPath, BoltOptions{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	again, err := c.Step(ctx, 0, StepRequest{Seq: 2, Done: done, Issue: []Issue{iss}})
	if err != nil || len(again.Tasks) != 1 || again.Tasks[0].Task.ID != want.Task.ID {
		t.Errorf("replayed step: %v %v, want task %s", again, err, want.Task.ID)
	}
	// A reserved entry gone: nothing popped.
	gone := iss
	gone.Next = &Next{Key: queueKey("a.test", 1, 1), TaskID: "x"}
	res, err := c.Step(ctx, 0, StepRequest{Seq: 3, Done: []Done{{Host: "a.test", TaskID: want.Task.ID}}, Issue: []Issue{gone}})
	if err != nil || len(res.Tasks) != 0 {
		t.Errorf("step with a gone reservation: %v %v", res, err)
	}
}

// fourQueued is a store with a.test/1..4 queued (depth 1) under a host
// budget, and the issue that pops the host's head.
func fourQueued(t *testing.T, budget int) (*Bolt, Issue) {
	t.Helper()
	b := openGroupTest(t, -1)
	b.SetLimits(Limits{HostBudget: budget})
	var q []Queued
	for n := 1; n <= 4; n++ {
		q = append(q, Queued{Host: "a.test", Link: messages.Link{URL: fmt.Sprintf("http://a.test/%d", n), Depth: 1}, Attempt: 1})
	}
	if _, err := b.Apply(context.Background(), 0, 1, q, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	return b, Issue{Host: "a.test", IssuedAt: now, Deadline: now.Add(time.Minute), LeaseUntil: now.Add(2 * time.Minute)}
}

// stepReserved runs the step that records the task reserved by next (with
// done, under a host budget of 2) and checks the task recorded is the
// reserved one, field for field, and that the budget reserved no third.
func stepReserved(t *testing.T, s Store, p int, iss Issue, next *Next, done []Done) InFlight {
	t.Helper()
	r := iss
	r.Next = next
	want := next.Task(p, r)
	res, err := Step(context.Background(), s, p, StepRequest{Seq: 2, Done: done, Issue: []Issue{r}})
	if err != nil || len(res.Tasks) != 1 {
		t.Fatalf("step: %v %v", res, err)
	}
	if got := res.Tasks[0]; dump(got) != dump(want) {
		t.Errorf("recorded %s\nreserved %s", dump(got), dump(want))
	}
	if res.Tasks[0].Next != nil {
		t.Errorf("the host's budget (2) allows no third pop, but %s was reserved", res.Tasks[0].Next.Queued.Link.URL)
	}
	return want
}

// A pop also reads the entry after the reservation (Next.Then) when the
// host's budget allows that pop too. Popped by its key once the reserved
// task is done, it is recorded as the task the frontier sent from it, field
// for field, under the ID a replay without reservations derives.
func TestReservedThen(t *testing.T) {
	ctx := context.Background()
	b, iss := fourQueued(t, 3)
	tasks, err := b.Pop(ctx, 0, []Issue{iss})
	if err != nil || len(tasks) != 1 || tasks[0].Next == nil || tasks[0].Next.Then == nil {
		t.Fatalf("pop: %v %v, want a reservation and the entry after it", tasks, err)
	}
	next, then := tasks[0].Next, tasks[0].Next.Then
	if next.Queued.Link.URL != "http://a.test/2" || then.Queued.Link.URL != "http://a.test/3" {
		t.Fatalf("reserved %s then %s, want /2 then /3", next.Queued.Link.URL, then.Queued.Link.URL)
	}
	if then.Then != nil {
		t.Errorf("a third entry read: %s", then.Then.Queued.Link.URL)
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if err := b.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(copyPath, 0o600) }); err != nil {
		t.Fatal(err)
	}
	// The frontier's steps: done 1 with the reserved 2, then done 2 with 3.
	r := iss
	r.Next = next
	res, err := b.Step(ctx, 0, StepRequest{Seq: 2, Done: []Done{{Host: "a.test", TaskID: tasks[0].Task.ID}}, Issue: []Issue{r}})
	if err != nil || len(res.Tasks) != 1 || res.Tasks[0].Task.ID != next.TaskID {
		t.Fatalf("step recording the reservation: %v %v", res, err)
	}
	if res.Tasks[0].Next == nil || res.Tasks[0].Next.TaskID != then.TaskID || res.Tasks[0].Next.Then != nil {
		t.Errorf("after the second pop: reserved %+v, want /3 and no entry after it (the budget of 3)", res.Tasks[0].Next)
	}
	r.Next = then
	want := then.Task(0, r)
	res, err = b.Step(ctx, 0, StepRequest{Seq: 3, Done: []Done{{Host: "a.test", TaskID: next.TaskID}}, Issue: []Issue{r}})
	if err != nil || len(res.Tasks) != 1 {
		t.Fatalf("step recording the entry after the reservation: %v %v", res, err)
	}
	if got := res.Tasks[0]; dump(got) != dump(want) {
		t.Errorf("recorded %s\nsent     %s", dump(got), dump(want))
	}
	// The replay of both steps from the copy, without reservations: the
	// same IDs.
	c, err := OpenBoltWith(copyPath, BoltOptions{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := c.Step(ctx, 0, StepRequest{Seq: 2, Done: []Done{{Host: "a.test", TaskID: tasks[0].Task.ID}}, Issue: []Issue{iss}})
	if err != nil || len(a.Tasks) != 1 || a.Tasks[0].Task.ID != next.TaskID {
		t.Fatalf("replayed first step: %v %v", a, err)
	}
	a, err = c.Step(ctx, 0, StepRequest{Seq: 3, Done: []Done{{Host: "a.test", TaskID: next.TaskID}}, Issue: []Issue{iss}})
	if err != nil || len(a.Tasks) != 1 || a.Tasks[0].Task.ID != want.Task.ID {
		t.Errorf("replayed second step: %v %v, want task %s", a, err, want.Task.ID)
	}
}

// An early write that is not urgent (its tasks went out from reservations)
// waits for company like any other; hurry ends that wait at once. A wait
// cut short so does not count as a paced group that gathered too few.
func TestGroupCommitEarlyWriteWaitsUnlessHurried(t *testing.T) {
	const interval = 400 * time.Millisecond
	var g *groupCommit
	// Each case on a new store: its first paced group is a trial of the
	// pacing, which a lone write fails (it would pause the pacing).
	early := func(hurry bool) time.Duration {
		g = openGroupTest(t, interval).writes
		err := g.update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("w")); return err }, false)
		if err != nil { // a commit now: the next one is paced
			t.Fatal(err)
		}
		start := time.Now()
		var ranAt time.Duration
		done := make(chan error, 1)
		go func() {
			done <- g.updateEarly(func(tx *bolt.Tx) error {
				_, err := tx.CreateBucketIfNotExists([]byte("early"))
				return err
			}, func() { ranAt = time.Since(start) }, false, false)
		}()
		if hurry {
			waitPending(t, g, 1)
			g.hurry()
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return ranAt
	}
	if got := early(false); got < interval/2 {
		t.Errorf("a write that is not urgent ran after %s; want it paced (interval %s)", got, interval)
	}
	if got := early(true); got > interval/2 {
		t.Errorf("a hurried write ran after %s; want at once (interval %s)", got, interval)
	}
	g.mu.Lock()
	small := g.small
	g.mu.Unlock()
	if small != 0 {
		t.Errorf("a wait cut short by hurry counted as %d small paced groups", small)
	}
}

// A hurry that comes before the write it is for (a partition's step is
// written from its own goroutine) still spares that write the pacing.
func TestGroupCommitHurryBeforeTheWriteComes(t *testing.T) {
	const interval = 400 * time.Millisecond
	g := openGroupTest(t, interval).writes
	err := g.update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("w")); return err }, false)
	if err != nil { // a commit now: the next one is paced
		t.Fatal(err)
	}
	g.hurry()
	start := time.Now()
	var ranAt time.Duration
	err = g.updateEarly(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("early"))
		return err
	}, func() { ranAt = time.Since(start) }, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if ranAt > interval/2 {
		t.Errorf("a write hurried before it came ran after %s; want at once (interval %s)", ranAt, interval)
	}
}

// A write its caller waits on with nothing else to do — a partition's
// load, the page budget an issue takes first — does not wait for the
// pacing: with --max-pages a one-host crawl paid it on every issue while a
// trial of the pacing ran (1,318 pages/s without the budget, 870 with it).
func TestGroupCommitCallersThatWaitAreNotPaced(t *testing.T) {
	const interval = 400 * time.Millisecond
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		write func(b *Bolt) error
		paced bool
	}{
		{"a plain write", func(b *Bolt) error {
			return b.update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("w2")); return err })
		}, true},
		{"TakeBudget", func(b *Bolt) error { _, err := b.TakeBudget(ctx, 1, 10); return err }, false},
		{"Load", func(b *Bolt) error { _, err := b.Load(ctx, 0); return err }, false},
	} {
		b := openGroupTest(t, interval) // a new store: its first paced group is a trial
		if err := b.update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("w")); return err }); err != nil {
			t.Fatal(err) // a commit now: the next one is paced
		}
		start := time.Now()
		if err := c.write(b); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		took := time.Since(start)
		if c.paced && took < interval/2 {
			t.Errorf("%s committed after %s; want it paced (interval %s)", c.name, took, interval)
		}
		if !c.paced && took > interval/2 {
			t.Errorf("%s committed after %s; want it at once (interval %s)", c.name, took, interval)
		}
	}
}

// TestBudgetRidesTheNextCommit: TakeBudget writes nothing of its own; the
// next group's commit carries the count (a copy of the file before it is the
// state a crash leaves: the take is not there, and the replay takes again),
// and Close keeps what was taken after the last group.
func TestBudgetRidesTheNextCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := OpenBoltWith(path, BoltOptions{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	issuedIn := func(b *Bolt) uint64 {
		t.Helper()
		copyPath := filepath.Join(t.TempDir(), "copy.db")
		if err := b.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(copyPath, 0o600) }); err != nil {
			t.Fatal(err)
		}
		c, err := OpenBoltWith(copyPath, BoltOptions{CommitInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		st, err := c.Stats(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.Issued
	}
	commits := b.Commits()
	if got, err := b.TakeBudget(ctx, 5, 10); got != 5 || err != nil {
		t.Fatalf("TakeBudget(5, 10) = %d, %v", got, err)
	}
	if b.Commits() != commits {
		t.Errorf("TakeBudget committed on its own: %d commits, want %d", b.Commits(), commits)
	}
	if st, _ := b.Stats(ctx, nil); st.Issued != 5 {
		t.Errorf("Stats.Issued = %d right after the take, want 5", st.Issued)
	}
	if got := issuedIn(b); got != 0 {
		t.Errorf("the file holds %d before any commit, want 0", got)
	}
	q := Queued{Host: "a.test", Link: messages.Link{URL: "http://a.test/1"}, Attempt: 1}
	if _, err := b.Apply(ctx, 0, 1, []Queued{q}, nil); err != nil {
		t.Fatal(err)
	}
	if got := issuedIn(b); got != 5 {
		t.Errorf("the file holds %d after the next commit, want 5", got)
	}
	if got, _ := b.TakeBudget(ctx, 9, 10); got != 5 {
		t.Errorf("TakeBudget(9, 10) = %d, want the 5 left", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TakeBudget(ctx, 1, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("TakeBudget after Close: %v, want ErrClosed", err)
	}
	b, err = OpenBoltWith(path, BoltOptions{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if st, _ := b.Stats(ctx, nil); st.Issued != 10 {
		t.Errorf("reopened: Issued = %d, want the 10 taken before Close", st.Issued)
	}
}

// Loading a partition never written reads, without a commit: a new crawl's
// partitions load at once instead of one commit each in turn.
func TestLoadOfAnEmptyPartitionDoesNotCommit(t *testing.T) {
	ctx := context.Background()
	b := openGroupTest(t, -1)
	commits := b.Commits()
	st, err := b.Load(ctx, 7)
	if err != nil || st.Applied != 0 || len(st.Hosts) != 0 {
		t.Fatalf("Load of a new partition: %+v, %v", st, err)
	}
	if b.Commits() != commits {
		t.Errorf("Load of a new partition committed: %d commits, want %d", b.Commits(), commits)
	}
	q := Queued{Host: "a.test", Link: messages.Link{URL: "http://a.test/1"}, Attempt: 1}
	if _, err := b.Apply(ctx, 7, 1, []Queued{q}, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Load(ctx, 7); err != nil || st.Applied != 1 || len(st.Hosts) != 1 {
		t.Errorf("Load after a write: %+v, %v", st, err)
	}
}

// Chained writes share a transaction: a write that arrives while a chained
// write's transaction lingers runs in it at once and hears its results
// before anything commits; the chain ends with a write that does not ask
// to linger, and one commit makes them all durable.
func TestChainedWritesShareATransaction(t *testing.T) {
	b := openGroupTest(t, 10*time.Second)
	g := b.writes
	g.setGap(10 * time.Second) // the test, not the clock, ends the lingering
	bucket := func(name string) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte(name)); return err }
	}
	before := g.commits.Load()
	errs := make(chan error, 3)
	var write func(i int)
	write = func(i int) {
		errs <- g.updateEarly(bucket(fmt.Sprint("chain", i)), func() {
			if i == 2 {
				// The last write ends the chain: its transaction commits
				// while its caller hears of it, so only the count below
				// tells whether it shared the first write's transaction.
				return
			}
			if n := g.commits.Load(); n != before {
				t.Errorf("write %d heard its results after %d commits", i, n-before)
			}
			go write(i + 1) // the next step, once this one ran
		}, true, i < 2)
	}
	go write(0)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := g.commits.Load() - before; n != 1 {
		t.Errorf("%d commits for a chain of three writes, want 1", n)
	}
	if err := b.db.View(func(tx *bolt.Tx) error {
		for i := range 3 {
			if tx.Bucket([]byte(fmt.Sprint("chain", i))) == nil {
				return fmt.Errorf("write %d not committed", i)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A lingering transaction commits at once for a write whose caller waits
// for the commit with nothing else to do (a partition loading, a pop the
// loop waits for), and lingers no longer than lingerGap without a write.
func TestLingerEndsForACallerThatWaits(t *testing.T) {
	b := openGroupTest(t, 10*time.Second)
	g := b.writes
	g.setGap(10 * time.Second)
	ran := make(chan struct{})
	chained := make(chan error, 1)
	go func() {
		chained <- g.updateEarly(func(*bolt.Tx) error { return nil }, func() { close(ran) }, true, true)
	}()
	<-ran // its transaction now lingers, for up to ten seconds
	waiting := make(chan error, 1)
	go func() { waiting <- g.update(func(*bolt.Tx) error { return nil }, true) }()
	for _, c := range []chan error{waiting, chained} {
		select {
		case err := <-c:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a write whose caller waits did not end the lingering")
		}
	}

	g.setGap(50 * time.Millisecond) // no write comes: the gap ends it
	start := time.Now()
	if err := g.updateEarly(func(*bolt.Tx) error { return nil }, func() {}, true, true); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a chained write with no successor committed after %v", took)
	}
}

// A step written After one that is not in the store (its group failed)
// changes nothing and says so.
func TestStepAfterAMissingStepFails(t *testing.T) {
	b := openGroupTest(t, -1)
	ctx := context.Background()
	q := []Queued{{Host: "a.test", Link: messages.Link{URL: "http://a.test/1"}, Attempt: 1}}
	if _, err := b.Step(ctx, 0, StepRequest{Seq: 1, Enqueue: q}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Step(ctx, 0, StepRequest{Seq: 3, After: true, Enqueue: []Queued{{Host: "a.test", Link: messages.Link{URL: "http://a.test/2"}, Attempt: 1}}})
	if !errors.Is(err, ErrChainBroken) {
		t.Fatalf("step 3 after a missing step 2: %v, want ErrChainBroken", err)
	}
	res, err := b.Step(ctx, 0, StepRequest{Seq: 2, After: true, Enqueue: []Queued{{Host: "a.test", Link: messages.Link{URL: "http://a.test/3"}, Attempt: 1}}})
	if err != nil || !res.Applied {
		t.Fatalf("step 2 after step 1: %+v, %v", res, err)
	}
	st, err := b.Stats(ctx, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	if st.Queued != 2 {
		t.Errorf("%d URLs queued, want 2 (the broken step's left out)", st.Queued)
	}
}
