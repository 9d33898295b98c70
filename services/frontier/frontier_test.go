package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

type harness struct {
	t     *testing.T
	js    jetstream.JetStream
	names subjects.Names
	st    store.Store
	svc   *Service
	stop  func()
}

// start runs a one-partition frontier over an embedded server and bbolt.
func start(t *testing.T, o Options) *harness { return startOn(t, o, nil) }

// startOn is start over the bbolt store as wrap wraps it (nil: as it is);
// the harness's st is the bbolt store itself.
func startOn(t *testing.T, o Options, wrap func(*store.Bolt) store.Store) *harness {
	if wrap == nil {
		return startWith(t, o, nil)
	}
	return startWith(t, o, func(b *store.Bolt, _ jetstream.JetStream, _ subjects.Names) store.Store { return wrap(b) })
}

// startWith is startOn whose wrap also has the server, before the service
// runs: what it publishes comes before anything the service publishes.
func startWith(t *testing.T, o Options, wrap func(*store.Bolt, jetstream.JetStream, subjects.Names) store.Store) *harness {
	js, names := testbus.Start(t, 1)
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o.JS, o.Names, o.Store, o.Partitions = js, names, st, []int{0}
	if wrap != nil {
		o.Store = wrap(st, js, names)
	}
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.FetchTimeout == 0 {
		o.FetchTimeout = time.Second
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	h := &harness{t: t, js: js, names: names, st: st, svc: New(o)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.svc.Run(ctx) }()
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			h.stop()
		}
	})
	return h
}

func (h *harness) enqueue(urls ...string) {
	var links []messages.Link
	for _, u := range urls {
		links = append(links, messages.Link{URL: u})
	}
	data, _ := json.Marshal(messages.NewURLs{V: 1, Links: links})
	testbus.Publish(h.t, h.js, h.names.FrontierNew(0), data, messages.HeaderKind, "new")
}

func (h *harness) done(task messages.FetchTask, expired bool) {
	data, _ := json.Marshal(messages.FetchDone{V: 1, TaskID: task.ID, Host: task.Host, URL: task.URL, Status: 200, Expired: expired})
	testbus.Publish(h.t, h.js, h.names.FrontierDone(0), data, messages.HeaderKind, "done")
}

// task waits for the next fetch task, or returns ok=false after timeout.
func (h *harness) task(timeout time.Duration) (messages.FetchTask, time.Time, bool) {
	m := testbus.Next(h.t, h.js, h.names.StreamFetch(), h.names.ConsumerFetcher(), timeout)
	if m == nil {
		return messages.FetchTask{}, time.Time{}, false
	}
	var task messages.FetchTask
	if err := messages.Decode(m.Data(), &task); err != nil {
		h.t.Fatal(err)
	}
	return task, time.Now(), true
}

func TestOneTaskPerHostAndPolitenessDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	h := start(t, Options{Delay: delay})
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3", "http://b.example/1")

	issued := map[string][]string{}
	for i := 0; i < 2; i++ { // one task per host, at once
		task, _, ok := h.task(2 * time.Second)
		if !ok {
			t.Fatal("no task issued")
		}
		issued[task.Host] = append(issued[task.Host], task.URL)
		if task.Attempt != 1 || task.Deadline.Before(task.IssuedAt) {
			t.Errorf("task %+v", task)
		}
		defer h.done(task, false)
	}
	if len(issued) != 2 {
		t.Fatalf("first two tasks went to %v, want one per host", issued)
	}
	if _, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatal("a second task was issued for a host with one in flight")
	}
}

func TestPolitenessGapAfterDone(t *testing.T) {
	const delay = 200 * time.Millisecond
	h := start(t, Options{Delay: delay})
	urls := []string{"http://a.example/1", "http://a.example/2", "http://a.example/3"}
	h.enqueue(urls...)
	var doneAt time.Time
	for i, want := range urls {
		task, at, ok := h.task(3 * time.Second)
		if !ok {
			t.Fatalf("task %d not issued", i)
		}
		if task.URL != want {
			t.Errorf("task %d is %s, want %s (FIFO per host)", i, task.URL, want)
		}
		if i > 0 && at.Sub(doneAt) < delay {
			t.Errorf("request %d came %s after the previous one finished, want at least %s", i, at.Sub(doneAt), delay)
		}
		doneAt = time.Now()
		h.done(task, false)
	}
}

func TestLostTaskIsReissuedThenDropped(t *testing.T) {
	h := start(t, Options{TaskTTL: 50 * time.Millisecond, FetchTimeout: 50 * time.Millisecond, LeaseMargin: 50 * time.Millisecond, MaxAttempts: 2})
	h.enqueue("http://a.example/lost")
	first, _, ok := h.task(2 * time.Second)
	if !ok {
		t.Fatal("no task")
	}
	// Never report it: after the lease the URL comes back as attempt 2.
	second, _, ok := h.task(3 * time.Second)
	if !ok || second.URL != first.URL || second.Attempt != 2 || second.ID == first.ID {
		t.Fatalf("re-issue: %+v (first %+v)", second, first)
	}
	// A late report of the first task is stale and changes nothing.
	h.done(first, false)
	if _, _, ok := h.task(500 * time.Millisecond); ok {
		t.Fatal("task issued while attempt 2 is in flight")
	}
	// Attempt 2 is lost too: with --max-attempts 2 the URL is given up.
	if _, _, ok := h.task(time.Second); ok {
		t.Fatal("URL issued a third time")
	}
	if h.svc.Stats.Dropped.Load() != 1 {
		t.Errorf("dropped = %d, want 1", h.svc.Stats.Dropped.Load())
	}
	st, _ := h.st.Stats(context.Background(), []int{0})
	if st.InFlight != 0 || st.Queued != 0 {
		t.Errorf("store after drop: %+v", st)
	}
	// The URL ends with a page record saying why (issue 18), under the
	// last task's page message ID.
	m := testbus.Next(t, h.js, h.names.StreamPages(), h.names.ConsumerParser(), 3*time.Second)
	if m == nil {
		t.Fatal("no page record of the URL given up")
	}
	p, err := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
	if err != nil || p.URL != "http://a.example/lost" || p.ErrorKind != "lost" || p.Status != 0 || p.TaskID != second.ID ||
		!strings.Contains(p.Error, "never came back") || !strings.Contains(p.Error, "--max-attempts 2") {
		t.Fatalf("record %+v (%v)", p, err)
	}
	if id := m.Headers().Get("Nats-Msg-Id"); id != "page:"+second.ID {
		t.Errorf("record's message ID %q, want page:%s", id, second.ID)
	}
	if extra := testbus.Next(t, h.js, h.names.StreamPages(), h.names.ConsumerParser(), 200*time.Millisecond); extra != nil {
		t.Errorf("a second page record: %s", extra.Headers().Get(messages.HeaderPage))
	}
}

// crashingExpire is a store whose Expire never returns until released: the
// frontier using it stands for one that crashed right after publishing a
// lost URL's record and before the store dropped the URL.
type crashingExpire struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (c *crashingExpire) Expire(ctx context.Context, p int, host, taskID string, maxAttempts int) (bool, error) {
	close(c.entered)
	<-c.release
	return c.Store.Expire(ctx, p, host, taskID, maxAttempts)
}

// A lost URL's record is published before the store drops the URL, under a
// message ID of the task: when the frontier dies between the two, the next
// owner expires the task again and publishes the same record, which
// JetStream stores once. Every URL ends with exactly one record.
func TestLostRecordSurvivesACrashBeforeTheStoreDropsTheURL(t *testing.T) {
	js, names := testbus.Start(t, 1)
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o := Options{JS: js, Names: names, Partitions: []int{0}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TaskTTL: 50 * time.Millisecond, FetchTimeout: 50 * time.Millisecond, LeaseMargin: 50 * time.Millisecond, MaxAttempts: 1}
	crash := &crashingExpire{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	first := o
	first.Store = crash
	runSvc := func(svc *Service) func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { svc.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	stopFirst := runSvc(New(first))
	t.Cleanup(func() {
		select {
		case <-crash.release:
		default:
			close(crash.release)
		}
		stopFirst()
	})
	h := &harness{t: t, js: js, names: names}
	h.enqueue("http://a.example/lost")
	task, _, ok := h.task(2 * time.Second)
	if !ok {
		t.Fatal("no task")
	}
	select { // its lease runs out: the record goes out, then Expire "crashes"
	case <-crash.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the lost task was never expired")
	}
	if n := pagesStored(t, js, names); n != 1 {
		t.Fatalf("%d page records before the store step, want 1: the record must go out first", n)
	}
	if got, _ := st.Stats(context.Background(), []int{0}); got.InFlight != 1 {
		t.Fatalf("store %+v: want the task still in flight, as after a crash", got)
	}

	// The next owner of the partition.
	second := o
	second.Store = st
	next := New(second)
	stopNext := runSvc(next)
	defer stopNext()
	testutil.Eventually(t, 5*time.Second, "the next owner to give the URL up", func() bool { return next.Stats.Dropped.Load() > 0 })
	if n := pagesStored(t, js, names); n != 1 {
		t.Errorf("%d page records after the replay, want 1", n)
	}
	m := testbus.Next(t, js, names.StreamPages(), names.ConsumerParser(), 2*time.Second)
	if m == nil {
		t.Fatal("no record")
	}
	if p, err := messages.DecodePage(m.Headers().Get(messages.HeaderPage)); err != nil || p.TaskID != task.ID || p.ErrorKind != "lost" {
		t.Errorf("record %+v (%v)", p, err)
	}
	if got, _ := st.Stats(context.Background(), []int{0}); got.InFlight != 0 || got.Queued != 0 {
		t.Errorf("store after the replay %+v, want the URL gone", got)
	}
}

func pagesStored(t *testing.T, js jetstream.JetStream, names subjects.Names) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), names.StreamPages())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestExpiredTaskIsRequeuedAtOnce(t *testing.T) {
	h := start(t, Options{})
	h.enqueue("http://a.example/late")
	first, _, ok := h.task(2 * time.Second)
	if !ok {
		t.Fatal("no task")
	}
	h.done(first, true) // the fetcher got it after its deadline
	second, _, ok := h.task(2 * time.Second)
	if !ok || second.URL != first.URL || second.ID == first.ID {
		t.Fatalf("expired task not re-issued: %+v", second)
	}
}

func TestBudgetStopsIssuing(t *testing.T) {
	h := start(t, Options{MaxPages: 2})
	h.enqueue("http://a.example/1", "http://b.example/1", "http://c.example/1", "http://d.example/1")
	n := 0
	for {
		if _, _, ok := h.task(500 * time.Millisecond); !ok {
			break
		}
		n++
	}
	if n != 2 {
		t.Errorf("issued %d tasks with --max-pages 2", n)
	}
	st, _ := h.st.Stats(context.Background(), []int{0})
	if st.Queued != 2 || st.Issued != 2 {
		t.Errorf("store: %+v, want 2 queued, 2 issued", st)
	}
}

// TestBudgetIssuesFromReservations: with --max-pages the tasks that leave
// from reservations take their budget too: the crawl stops at exactly max
// pages. (TestDoneBeforeItsTasksCommit checks they leave before the step.)
func TestBudgetIssuesFromReservations(t *testing.T) {
	h := start(t, Options{MaxPages: 8})
	for i := range 10 {
		h.enqueue(fmt.Sprintf("http://a.example/%d", i))
	}
	n := 0
	for {
		task, _, ok := h.task(500 * time.Millisecond)
		if !ok {
			break
		}
		n++
		h.done(task, false)
	}
	if n != 8 {
		t.Errorf("issued %d tasks with --max-pages 8", n)
	}
	if r := h.svc.Stats.Reserved.Load(); r < 2 {
		t.Errorf("%d tasks left from reservations, want 2 or more", r)
	}
	st, _ := h.st.Stats(context.Background(), []int{0})
	if st.Queued != 2 || st.Issued != 8 {
		t.Errorf("store: %+v, want 2 queued, 8 issued", st)
	}
}

func TestRestartKeepsQueuesAndTasks(t *testing.T) {
	h := start(t, Options{})
	h.enqueue("http://a.example/1", "http://a.example/2")
	first, _, ok := h.task(2 * time.Second)
	if !ok {
		t.Fatal("no task")
	}
	h.stop()
	// A new frontier on the same store and streams: the task in flight is
	// not issued again, and reporting it frees the host for the next URL.
	o := h.svc.o
	svc := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)
	if task, _, ok := h.task(500 * time.Millisecond); ok {
		t.Fatalf("task re-issued after restart: %+v", task)
	}
	h.done(first, false)
	next, _, ok := h.task(2 * time.Second)
	if !ok || next.URL != "http://a.example/2" {
		t.Fatalf("after restart: %+v, %v", next, ok)
	}
}

func TestFailingHostIsBackedOff(t *testing.T) {
	h := start(t, Options{})
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3")
	fail := func(task messages.FetchTask) {
		data, _ := json.Marshal(messages.FetchDone{V: 1, TaskID: task.ID, Host: task.Host, URL: task.URL, Status: 503})
		testbus.Publish(h.t, h.js, h.names.FrontierDone(0), data, messages.HeaderKind, "done")
	}
	first, _, _ := h.task(2 * time.Second)
	fail(first)
	second, _, ok := h.task(2 * time.Second) // one failure: no extra rest
	if !ok {
		t.Fatal("no second task")
	}
	fail(second)
	if _, _, ok := h.task(700 * time.Millisecond); ok {
		t.Fatal("a host that failed twice in a row got its next task at once")
	}
	if _, _, ok := h.task(2 * time.Second); !ok {
		t.Fatal("the failing host was never given its next task")
	}
}

// Issue 18: the rest a slow host earns (k x a 30 s response = 5 minutes),
// its Crawl-delay and its failure backoff are capped by MaxGap, and a
// capped Crawl-delay is counted.
func TestMaxGapCapsTheRestOfASlowHost(t *testing.T) {
	h := start(t, Options{Factor: 10, MaxCrawlDelay: time.Hour, MaxGap: 300 * time.Millisecond})
	h.enqueue("http://slow.example/1", "http://slow.example/2", "http://slow.example/3")
	first, _, _ := h.task(2 * time.Second)
	data, _ := json.Marshal(messages.FetchDone{V: 1, TaskID: first.ID, Host: first.Host, URL: first.URL, Status: 200, Duration: 30 * time.Second})
	testbus.Publish(h.t, h.js, h.names.FrontierDone(0), data, messages.HeaderKind, "done")
	second, _, ok := h.task(5 * time.Second)
	if !ok {
		t.Fatal("a host whose response took 30 s was not given its next task within the 300 ms max gap (and 5 s of slack)")
	}
	data, _ = json.Marshal(messages.FetchDone{V: 1, TaskID: second.ID, Host: second.Host, URL: second.URL, Status: 200, CrawlDelay: time.Hour})
	testbus.Publish(h.t, h.js, h.names.FrontierDone(0), data, messages.HeaderKind, "done")
	if _, _, ok := h.task(5 * time.Second); !ok {
		t.Fatal("a host with an hour's Crawl-delay was not given its next task within the max gap")
	}
	if n := h.svc.Stats.CrawlDelayCapped.Load(); n != 1 {
		t.Fatalf("capped Crawl-delays counted: %d, want 1", n)
	}
}

func (h *harness) enqueueLinks(links ...messages.Link) {
	data, _ := json.Marshal(messages.NewURLs{V: 1, Links: links})
	testbus.Publish(h.t, h.js, h.names.FrontierNew(0), data, messages.HeaderKind, "new")
}

// With scores (a topical crawl) a host's URLs go best first; without, the
// shallowest first; the score travels on the task.
func TestBestFirstAndBreadthFirstOrder(t *testing.T) {
	h := start(t, Options{})
	h.enqueueLinks(
		messages.Link{URL: "http://a.example/low", Depth: 1, Score: 0.1},
		messages.Link{URL: "http://a.example/high", Depth: 3, Score: 0.9},
		messages.Link{URL: "http://a.example/mid", Depth: 2, Score: 0.5},
		messages.Link{URL: "http://b.example/deep", Depth: 4},
		messages.Link{URL: "http://b.example/shallow", Depth: 1},
		messages.Link{URL: "http://b.example/middle", Depth: 2},
	)
	got := map[string][]string{}
	for range 6 {
		task, _, ok := h.task(3 * time.Second)
		if !ok {
			t.Fatalf("only %v issued", got)
		}
		if task.URL == "http://a.example/high" && task.Score != 0.9 {
			t.Errorf("task lost its score: %+v", task)
		}
		got[task.Host] = append(got[task.Host], task.URL)
		h.done(task, false)
	}
	want := map[string][]string{
		"a.example": {"http://a.example/high", "http://a.example/mid", "http://a.example/low"},
		"b.example": {"http://b.example/shallow", "http://b.example/middle", "http://b.example/deep"},
	}
	for host, urls := range want {
		if !slices.Equal(got[host], urls) {
			t.Errorf("%s issued %v, want %v", host, got[host], urls)
		}
	}
}

// The gauges show queued URLs and hosts in flight or resting.
func TestGauges(t *testing.T) {
	h := start(t, Options{Delay: time.Hour})
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3", "http://b.example/1")
	var tasks []messages.FetchTask
	for range 2 {
		task, _, ok := h.task(2 * time.Second)
		if !ok {
			t.Fatal("not one task per host")
		}
		tasks = append(tasks, task)
	}
	for _, task := range tasks {
		if task.Host == "a.example" {
			h.done(task, false) // a rests an hour with two URLs; b stays in flight
		}
	}
	g := &h.svc.Gauges
	testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if g.Queued.Load() == 2 && g.InFlight.Load() == 1 && g.Waiting.Load() == 1 && g.Ready.Load() == 0 {
			return nil
		}
		return fmt.Errorf("gauges queued %d, in flight %d, waiting %d, ready %d; want 2, 1, 1, 0",
			g.Queued.Load(), g.InFlight.Load(), g.Waiting.Load(), g.Ready.Load())
	})
}

func (h *harness) handBack(task messages.FetchTask, why string) {
	data, _ := json.Marshal(messages.FetchDone{V: 1, TaskID: task.ID, Host: task.Host, URL: task.URL, Retry: true, Error: why})
	testbus.Publish(h.t, h.js, h.names.FrontierDone(0), data, messages.HeaderKind, "done")
}

// A URL the fetcher keeps handing back unfetched is issued at most
// --max-attempts + --max-deferrals times, then ends with a page record
// saying why; the host's next URL goes on.
func TestHandedBackURLEndsAfterMaxDeferrals(t *testing.T) {
	h := start(t, Options{MaxAttempts: 2, MaxDeferrals: 3})
	h.enqueue("http://a.example/busy", "http://a.example/next")
	for i := 1; i <= 5; i++ {
		task, _, ok := h.task(3 * time.Second)
		if !ok || task.URL != "http://a.example/busy" || task.Attempt != i {
			t.Fatalf("issue %d: %+v, want /busy attempt %d", i, task, i)
		}
		h.handBack(task, "server address at its per-IP limit")
	}
	next, _, ok := h.task(3 * time.Second)
	if !ok || next.URL != "http://a.example/next" {
		t.Fatalf("after 5 issues of /busy the next task is %+v, want /next", next)
	}
	m := testbus.Next(t, h.js, h.names.StreamPages(), h.names.ConsumerParser(), 3*time.Second)
	if m == nil {
		t.Fatal("no page record of the URL given up")
	}
	p, err := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
	if err != nil || p.URL != "http://a.example/busy" || p.ErrorKind != "deferred" || p.Status != 0 ||
		!strings.Contains(p.Error, "per-IP limit") || !strings.Contains(p.Error, "--max-deferrals 3") {
		t.Fatalf("record %+v (%v)", p, err)
	}
	if d, out := h.svc.Stats.Deferred.Load(), h.svc.Stats.DeferredOut.Load(); d != 5 || out != 1 {
		t.Errorf("deferred %d, deferred out %d; want 5, 1", d, out)
	}
}

// The in-flight gauge is the store's count of tasks in flight at every
// step, not a sample of a second ago: status (which reads the store) and
// /metrics (the gauge) show one figure.
func TestInFlightGaugeIsTheStoresCount(t *testing.T) {
	h := start(t, Options{Delay: time.Millisecond})
	h.enqueue("http://a.example/1", "http://b.example/1", "http://c.example/1", "http://a.example/2")
	agree := func(want int64) {
		t.Helper()
		// Both figures change in one step of the partition loop; read
		// them until that step is over (no one-second sampling).
		testutil.CheckFor(t, 500*time.Millisecond, 5*time.Millisecond, func() error {
			st, err := h.st.Stats(context.Background(), []int{0})
			g := h.svc.Gauges.InFlight.Load()
			if err != nil || st.InFlight != want || g != want {
				return fmt.Errorf("store in flight %d (%v), gauge %d; want both %d", st.InFlight, err, g, want)
			}
			return nil
		})
	}
	var tasks []messages.FetchTask
	for range 3 {
		task, _, ok := h.task(2 * time.Second)
		if !ok {
			t.Fatal("no task")
		}
		tasks = append(tasks, task)
	}
	agree(3)
	h.done(tasks[1], false) // b: nothing more queued
	agree(2)
	h.handBack(tasks[2], "robots.txt unreachable") // c: back in its queue
	h.done(tasks[0], false)                        // a: its second URL goes out
	for range 2 {
		if _, _, ok := h.task(2 * time.Second); !ok {
			t.Fatal("no task")
		}
	}
	agree(2)
}

// A done report that sent nothing to the host — its name does not exist,
// or the address guard refused it — neither rests the host nor adds to its
// failure backoff: its next URL goes at once, so an unresolvable host's
// queue ends at the loop's pace with --ignore-robots too (issue 18). A name
// server that failed (which may pass) still backs off.
func TestNothingSentRestsTheHostNoMore(t *testing.T) {
	s := New(Options{Delay: time.Second})
	pt := &partition{s: s, hosts: map[string]*host{}}
	now := time.Now()
	h := pt.host("nowhere.test")
	h.failures = 3 // three URLs failed already
	h.nextAt = now.Add(-time.Second)
	nx := messages.FetchDone{Host: "nowhere.test", Error: "lookup nowhere.test: no such host", ErrorKind: "dns", NoSuchHost: true, Duration: 3 * time.Millisecond}
	if got := pt.restUntil(nx, now); !got.Equal(now) {
		t.Errorf("after a name that does not exist: rest until now+%v, want now", got.Sub(now))
	}
	blocked := messages.FetchDone{Host: "nowhere.test", Error: "address refused", ErrorKind: "blocked"}
	if got := pt.restUntil(blocked, now); !got.Equal(now) {
		t.Errorf("after a refused address: rest until now+%v, want now", got.Sub(now))
	}
	h.nextAt = now.Add(400 * time.Millisecond) // a real request's rest still running
	if got := pt.restUntil(nx, now); !got.Equal(h.nextAt) {
		t.Errorf("with a rest running: until now+%v, want its end now+400ms", got.Sub(now))
	}
	servfail := messages.FetchDone{Host: "nowhere.test", Error: "lookup nowhere.test: server misbehaving", ErrorKind: "dns", Duration: 3 * time.Millisecond}
	if got := pt.restUntil(servfail, now); !got.After(now.Add(s.o.Delay)) {
		t.Errorf("after a failing name server: rest until now+%v, want the failure backoff, over the %v delay", got.Sub(now), s.o.Delay)
	}
}

// A host's next task is published from its reservation (read at the
// previous pop) when its done comes; a URL ranked above the reserved one
// that arrives meanwhile drops the reservation and goes first.
func TestReservedNextTask(t *testing.T) { testReservedNextTask(t, start(t, Options{})) }

func testReservedNextTask(t *testing.T, h *harness) {
	h.enqueueLinks(
		messages.Link{URL: "http://a.example/1", Depth: 2},
		messages.Link{URL: "http://a.example/2", Depth: 2},
		messages.Link{URL: "http://a.example/3", Depth: 2},
	)
	var got []string
	next := func() messages.FetchTask {
		t.Helper()
		task, _, ok := h.task(3 * time.Second)
		if !ok {
			t.Fatalf("only %v issued", got)
		}
		got = append(got, task.URL)
		return task
	}
	first := next()
	h.done(first, false)
	second := next() // from the reservation
	// The counter moves once the publish returns, just after the task can
	// already be read here.
	if !testutil.WaitFor(3*time.Second, 5*time.Millisecond, func() bool { return h.svc.Stats.Reserved.Load() == 1 }) {
		t.Errorf("reserved tasks = %d after the second, want 1", h.svc.Stats.Reserved.Load())
	}
	h.enqueueLinks(messages.Link{URL: "http://a.example/shallow", Depth: 1})
	// Let the new URL be applied before the done, in its own step.
	testutil.Eventually(t, 3*time.Second, "the new URL to be applied", func() bool { return h.svc.Stats.Enqueued.Load() >= 4 })
	h.done(second, false)
	h.done(next(), false)
	h.done(next(), false)
	want := []string{"http://a.example/1", "http://a.example/2", "http://a.example/shallow", "http://a.example/3"}
	if !slices.Equal(got, want) {
		t.Errorf("issued %v, want %v", got, want)
	}
	if _, _, ok := h.task(200 * time.Millisecond); ok {
		t.Error("a fifth task")
	}
	// Two at least: the shallow URL dropped the reservation it outranked
	// (the order above); it may itself go out from the reservation of the
	// step that queued it.
	if n := h.svc.Stats.Reserved.Load(); n < 2 {
		t.Errorf("reserved tasks = %d, want 2 or more", n)
	}
}

// slowSteps is a bbolt store whose steps wait for a gate while it is
// closed: a step pending for as long as the test likes.
type slowSteps struct {
	*store.Bolt
	closed atomic.Bool
	gate   chan struct{}
	once   sync.Once
}

// open opens the gate for good (once).
func (s *slowSteps) open() {
	s.once.Do(func() { s.closed.Store(false); close(s.gate) })
}

func (s *slowSteps) StepEarly(ctx context.Context, p int, r store.StepRequest, early func(store.StepResult)) (store.StepResult, error) {
	if s.closed.Load() {
		<-s.gate
	}
	return s.Bolt.StepEarly(ctx, p, r, early)
}

// While a step is pending, a done report of a task recorded by a committed
// step publishes the host's reserved task at once; the done report of that
// task (not yet recorded) waits until its record is durable, and then the
// host goes on; nothing is issued twice and the store ends empty.
func TestDoneWhileAStepIsPending(t *testing.T) {
	var st *slowSteps
	h := startOn(t, Options{}, func(b *store.Bolt) store.Store {
		st = &slowSteps{Bolt: b, gate: make(chan struct{})}
		return st
	})
	b, svc := st.Bolt, h.svc
	defer st.open() // a stop finishes the pending step: the gate must open first
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3")
	next := func(want string) messages.FetchTask {
		t.Helper()
		task, _, ok := h.task(3 * time.Second)
		if !ok {
			t.Fatalf("no task, want %s", want)
		}
		if task.URL != want {
			t.Fatalf("task %s, want %s", task.URL, want)
		}
		return task
	}
	a1 := next("http://a.example/1")
	st.closed.Store(true)
	h.enqueue("http://b.example/1") // its step waits at the gate
	testutil.Eventually(t, 3*time.Second, "b's URL to reach the step", func() bool { return svc.Stats.Enqueued.Load() >= 4 })
	h.done(a1, false)
	a2 := next("http://a.example/2") // published while the step waits
	h.done(a2, false)
	if task, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatalf("%s issued before the task it follows was recorded", task.URL)
	}
	st.open()
	got := map[string]messages.FetchTask{}
	for range 2 {
		task, _, ok := h.task(3 * time.Second)
		if !ok {
			t.Fatalf("only %v issued after the gate opened", got)
		}
		got[task.URL] = task
	}
	for _, u := range []string{"http://b.example/1", "http://a.example/3"} {
		if _, ok := got[u]; !ok {
			t.Errorf("%s not issued (got %v)", u, got)
		}
		h.done(got[u], false)
	}
	if task, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatalf("a further task: %s", task.URL)
	}
	testutil.CheckFor(t, 3*time.Second, 10*time.Millisecond, func() error {
		s, err := b.Stats(context.Background(), []int{0})
		if err != nil {
			return err
		}
		if s.InFlight != 0 || s.Queued != 0 {
			return fmt.Errorf("store not empty: %+v", s)
		}
		return nil
	})
	if n := svc.Stats.Reserved.Load(); n < 2 {
		t.Errorf("reserved tasks = %d, want 2 or more", n)
	}
}

// slowCommits is a bbolt store whose steps, once their function has run
// (the early hand-over) and committed, wait for a gate before they return
// while it is closed: a commit as slow as the test likes.
type slowCommits struct {
	*store.Bolt
	closed atomic.Bool
	gate   chan struct{}
	once   sync.Once
}

func (s *slowCommits) open() { s.once.Do(func() { s.closed.Store(false); close(s.gate) }) }

func (s *slowCommits) StepEarly(ctx context.Context, p int, r store.StepRequest, early func(store.StepResult)) (store.StepResult, error) {
	res, err := s.Bolt.StepEarly(ctx, p, r, early)
	if s.closed.Load() {
		<-s.gate
	}
	return res, err
}

// A done report that comes while the step recording its task commits goes
// on at once: the host's next task is published from the reservation that
// step read, before its commit returns (one host without a delay no longer
// waits for two fsyncs a page), and the step recording that task starts
// then too, settled at its own hand-over: a host's steps do not wait for
// each other's commits. Nothing is issued twice, and the store ends empty.
// With --max-pages the same holds: a reserved task's budget is taken from
// memory, without a step.
func TestDoneBeforeItsTasksCommit(t *testing.T) {
	t.Run("no budget", func(t *testing.T) { testDoneBeforeItsTasksCommit(t, Options{}) })
	t.Run("max-pages", func(t *testing.T) { testDoneBeforeItsTasksCommit(t, Options{MaxPages: 4}) })
}

func testDoneBeforeItsTasksCommit(t *testing.T, o Options) {
	var st *slowCommits
	h := startOn(t, o, func(b *store.Bolt) store.Store {
		st = &slowCommits{Bolt: b, gate: make(chan struct{})}
		return st
	})
	defer st.open() // a stop finishes the pending step: the gate must open first
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3", "http://a.example/4")
	next := func(want string, within time.Duration) messages.FetchTask {
		t.Helper()
		task, _, ok := h.task(within)
		if !ok {
			t.Fatalf("no task within %v, want %s", within, want)
		}
		if task.URL != want {
			t.Fatalf("task %s, want %s", task.URL, want)
		}
		return task
	}
	a1 := next("http://a.example/1", 3*time.Second)
	testutil.Eventually(t, 3*time.Second, "the first step's outcome", func() bool { return h.svc.Stats.Issued.Load() == 1 })
	st.closed.Store(true)
	h.done(a1, false)
	a2 := next("http://a.example/2", 3*time.Second) // its step's outcome now waits at the gate
	h.done(a2, false)
	a3 := next("http://a.example/3", time.Second) // before that step returns
	h.done(a3, false)
	a4 := next("http://a.example/4", time.Second) // and the next, while both wait
	h.done(a4, false)
	if task, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatalf("a further task: %s", task.URL)
	}
	st.open()
	if task, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatalf("a further task: %s", task.URL)
	}
	testutil.CheckFor(t, 3*time.Second, 10*time.Millisecond, func() error {
		s, err := st.Bolt.Stats(context.Background(), []int{0})
		if err != nil {
			return err
		}
		if s.InFlight != 0 || s.Queued != 0 {
			return fmt.Errorf("store not empty: %+v", s)
		}
		return nil
	})
}

// The steps a partition settles ahead of their commit are bounded
// (maxAhead): with every commit's outcome held back, one host crawled
// without a delay stops after that many, and goes on once they come. Every
// URL is issued once.
func TestStepsAheadOfTheirCommitAreBounded(t *testing.T) {
	var st *slowCommits
	h := startOn(t, Options{}, func(b *store.Bolt) store.Store {
		st = &slowCommits{Bolt: b, gate: make(chan struct{})}
		return st
	})
	defer st.open()
	const n = maxAhead + 20
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://a.example/%03d", i)
	}
	h.enqueue(urls...)
	seen := map[string]bool{}
	take := func(within time.Duration) bool {
		task, _, ok := h.task(within)
		if !ok {
			return false
		}
		if seen[task.URL] {
			t.Fatalf("%s issued twice", task.URL)
		}
		seen[task.URL] = true
		h.done(task, false)
		return true
	}
	if !take(3 * time.Second) {
		t.Fatal("no first task")
	}
	// At least one: take reported the first task done, so its host's next
	// task may already be out by the first look.
	testutil.Eventually(t, 3*time.Second, "the first step's outcome", func() bool { return h.svc.Stats.Issued.Load() >= 1 })
	st.closed.Store(true)
	for take(500 * time.Millisecond) {
	}
	t.Logf("%d tasks out while no step's commit came back", len(seen))
	if got := len(seen); got > maxAhead+3 || got < 3 {
		t.Fatalf("%d tasks out while no step's commit came back; want 3 to %d", got, maxAhead+3)
	}
	st.open()
	for len(seen) < n && take(3*time.Second) {
	}
	if len(seen) != n {
		t.Fatalf("%d of %d URLs issued", len(seen), n)
	}
}

// A done report held for its task's record (the step recording it waits)
// and released by that step's early hand-over rests its host from when it
// came, not from its release: the host's next task goes out one delay after
// the report, however long the step took to start.
func TestHeldReportRestsFromItsArrival(t *testing.T) {
	const delay, stall = 600 * time.Millisecond, 600 * time.Millisecond
	var st *slowSteps
	h := startOn(t, Options{Delay: delay}, func(b *store.Bolt) store.Store {
		st = &slowSteps{Bolt: b, gate: make(chan struct{})}
		return st
	})
	defer st.open()
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3")
	a1, _, ok := h.task(3 * time.Second)
	if !ok {
		t.Fatal("no first task")
	}
	h.done(a1, false)
	testutil.Eventually(t, 5*time.Second, "the done report applied", func() bool { return h.svc.Stats.Done.Load() == 1 })
	st.closed.Store(true)
	h.enqueue("http://b.example/1")      // its step waits at the gate
	a2, _, ok := h.task(3 * time.Second) // from its reservation, while that step waits
	if !ok || a2.URL != "http://a.example/2" {
		t.Fatalf("task %q (ok %v), want a.example/2", a2.URL, ok)
	}
	came := time.Now()
	h.done(a2, false) // held: the step recording a2 has not run
	time.Sleep(stall)
	st.open()
	for {
		task, at, ok := h.task(3 * time.Second)
		if !ok {
			t.Fatal("no task for a.example/3")
		}
		if task.URL != "http://a.example/3" {
			h.done(task, false)
			continue
		}
		if task.NotBefore.After(at) {
			at = task.NotBefore // issued ahead: the fetcher holds it until then
		}
		if after := at.Sub(came); after > delay+stall/2 {
			t.Errorf("a.example/3 issued %v after the report before it came; the delay is %v (its release was %v after it came)", after, delay, stall)
		}
		break
	}
}

// While a step is pending, a host that comes due on the timer publishes its
// reserved task at once, without waiting for that step: the next step
// records it.
func TestDueHostPublishesItsReservationWhileAStepIsPending(t *testing.T) {
	var st *slowSteps
	h := startOn(t, Options{Delay: 150 * time.Millisecond}, func(b *store.Bolt) store.Store {
		st = &slowSteps{Bolt: b, gate: make(chan struct{})}
		return st
	})
	b, svc := st.Bolt, h.svc
	defer st.open() // a stop finishes the pending step: the gate must open first
	h.enqueue("http://a.example/1", "http://a.example/2")
	a1, _, ok := h.task(3 * time.Second)
	if !ok {
		t.Fatal("no first task")
	}
	h.done(a1, false)
	testutil.Eventually(t, 5*time.Second, "the done report applied", func() bool { return svc.Stats.Done.Load() == 1 })
	st.closed.Store(true)
	h.enqueue("http://b.example/1") // its step waits at the gate
	a2, _, ok := h.task(3 * time.Second)
	if !ok || a2.URL != "http://a.example/2" {
		t.Fatalf("task %q (ok %v) while a step was pending; want a.example/2 from its reservation", a2.URL, ok)
	}
	st.open()
	b1, _, ok := h.task(3 * time.Second)
	if !ok || b1.URL != "http://b.example/1" {
		t.Fatalf("task %q (ok %v) after the gate opened; want b.example/1", b1.URL, ok)
	}
	h.done(a2, false)
	h.done(b1, false)
	testutil.Eventually(t, 5*time.Second, "the store empty", func() bool {
		s, err := b.Stats(context.Background(), []int{0})
		return err == nil && s.InFlight == 0 && s.Queued == 0
	})
	if n := svc.Stats.Reserved.Load(); n < 1 {
		t.Errorf("reserved tasks = %d, want 1 or more", n)
	}
}

// hurrySteps is a bbolt store that notes each issuing step's Hurry.
type hurrySteps struct {
	*store.Bolt
	mu              sync.Mutex
	hurried, paced  int
	unreservedPaced int // steps with a task not from a reservation, not hurried
}

func (s *hurrySteps) StepEarly(ctx context.Context, p int, r store.StepRequest, early func(store.StepResult)) (store.StepResult, error) {
	if len(r.Issue) > 0 {
		s.mu.Lock()
		if r.Hurry {
			s.hurried++
		} else {
			s.paced++
			for _, i := range r.Issue {
				if i.Next == nil {
					s.unreservedPaced++
				}
			}
		}
		s.mu.Unlock()
	}
	return s.Bolt.StepEarly(ctx, p, r, early)
}

// A step that only records tasks already published from reservations, for
// hosts that rest longer than the group commit's pacing, waits for company
// (Hurry false); with no delay, or for a task not yet published, it is
// urgent.
func TestOnlyWhatAHostWaitsForIsUrgent(t *testing.T) {
	for _, tc := range []struct {
		delay     time.Duration
		wantPaced bool
	}{{0, false}, {250 * time.Millisecond, true}} {
		t.Run(tc.delay.String(), func(t *testing.T) {
			var st *hurrySteps
			h := startOn(t, Options{Delay: tc.delay}, func(b *store.Bolt) store.Store {
				st = &hurrySteps{Bolt: b}
				return st
			})
			b := st.Bolt
			h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3", "http://a.example/4")
			for range 4 {
				task, _, ok := h.task(5 * time.Second)
				if !ok {
					t.Fatal("a task missing")
				}
				h.done(task, false)
			}
			testutil.Eventually(t, 5*time.Second, "the store empty", func() bool {
				s, err := b.Stats(context.Background(), []int{0})
				return err == nil && s.InFlight == 0 && s.Queued == 0
			})
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.unreservedPaced > 0 {
				t.Errorf("%d tasks not from a reservation in steps that were not hurried", st.unreservedPaced)
			}
			if tc.wantPaced && st.paced == 0 {
				t.Errorf("every issuing step hurried (%d) with a %s rest", st.hurried, tc.delay)
			}
			if !tc.wantPaced && st.paced > 0 {
				t.Errorf("%d issuing steps waited for company with no delay", st.paced)
			}
		})
	}
}

// askCounting is a store that records which sequences the frontier asked
// its intake log about.
type askCounting struct {
	store.Store
	mu    sync.Mutex
	asked []uint64
}

func (a *askCounting) Applied(ctx context.Context, p int, seqs []uint64) ([]bool, error) {
	a.mu.Lock()
	a.asked = append(a.asked, seqs...)
	a.mu.Unlock()
	return a.Store.Applied(ctx, p, seqs)
}

// A message the intake log holds (applied, then its ack lost in a crash)
// is recognized when it comes again and not applied twice; a message above
// the log's highest sequence, delivered for the first time, costs no look
// at the log.
func TestReplayedIntakeIsRecognizedAndNewIntakeIsNotLookedUp(t *testing.T) {
	ask := &askCounting{}
	var replayed uint64
	h := startWith(t, Options{}, func(b *store.Bolt, js jetstream.JetStream, names subjects.Names) store.Store {
		// The first message of the frontier stream was applied before
		// the crash. (Published here, before the service runs: the
		// stream's block keeper takes sequences too.)
		data, _ := json.Marshal(messages.NewURLs{V: 1, Links: []messages.Link{{URL: "http://a.example/replayed"}}})
		m := nats.NewMsg(names.FrontierNew(0))
		m.Data = data
		m.Header.Set(messages.HeaderKind, "new")
		ack, err := js.PublishMsg(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		replayed = ack.Sequence
		if err := b.MarkApplied(context.Background(), 0, []uint64{replayed}, 0); err != nil {
			t.Fatal(err)
		}
		ask.Store = b
		return ask
	})
	h.enqueue("http://b.example/new")
	task, _, ok := h.task(2 * time.Second)
	if !ok || task.URL != "http://b.example/new" {
		t.Fatalf("first task %+v (%v), want the new URL's", task, ok)
	}
	for i := range 5 {
		h.enqueue(fmt.Sprintf("http://c%d.example/", i)) // 3..7
		if _, _, ok := h.task(2 * time.Second); !ok {
			t.Fatalf("no task for the URL of sequence %d", i+3)
		}
	}
	if task, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatalf("a task %s for the replayed URL", task.URL)
	}
	ask.mu.Lock()
	defer ask.mu.Unlock()
	if !slices.Equal(ask.asked, []uint64{replayed}) {
		t.Errorf("asked the intake log about %v, want only [%d]", ask.asked, replayed)
	}
}
