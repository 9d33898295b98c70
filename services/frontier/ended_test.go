package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// A fetch's end heard in process (Service.Ended) hands the host's next task
// at once, but records nothing: the task ended stays in flight in the store
// until its done report comes, since its page's links are published only
// before that report. The next task's own end, should it come first, sends
// the task after it from the entry after the reservation (sendThen); its
// report waits for the step that records the task; then all apply, in
// order, and nothing is handed twice.
func TestEndedHandsTheNextTaskAndWaitsForTheReport(t *testing.T) {
	h, in, _, first := startHanding(t, 4, "http://a.example/1", "http://a.example/2", "http://a.example/3")
	ctx := context.Background()
	inFlight := func() string {
		st, err := h.st.Load(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, hs := range st.Hosts {
			if hs.Host == "a.example" && hs.InFlight != nil {
				return hs.InFlight.Task.URL
			}
		}
		return ""
	}
	// The first task comes from a pop: recorded, with the next reserved.
	testutil.Eventually(t, 5*time.Second, "the first task recorded", func() bool { return inFlight() == first.URL })

	end := func(task messages.FetchTask) messages.FetchDone {
		return messages.FetchDone{V: 1, TaskID: task.ID, Partition: 0, Host: task.Host, URL: task.URL, Status: 200, FinishedAt: time.Now()}
	}
	h.svc.Ended(end(first))
	_, second, ok := inboxTask(t, in, 2*time.Second)
	if !ok || second.URL != "http://a.example/2" {
		t.Fatalf("after the fetch's end: %+v, %v; want the host's next task handed", second, ok)
	}
	if n := h.svc.Stats.EndedEarly.Load(); n != 1 {
		t.Errorf("EndedEarly %d, want 1", n)
	}
	time.Sleep(300 * time.Millisecond) // room for a step that should not come
	if got := inFlight(); got != first.URL {
		t.Fatalf("in flight in the store before the first task's report: %q, want %q (its done must wait for the report)", got, first.URL)
	}

	// The second task's end before the first's report (no step has
	// recorded the second yet): the third goes out at once; the second's
	// report waits for the step that records the second task.
	h.svc.Ended(end(second))
	_, third, ok := inboxTask(t, in, 2*time.Second)
	if !ok || third.URL != "http://a.example/3" {
		t.Fatalf("after the second fetch's end: %+v, %v; want the third task sent", third, ok)
	}
	// Counted once the publish has returned, which can be after the
	// fetcher (here, this test) has the task.
	testutil.Eventually(t, 2*time.Second, "SentThen 1", func() bool { return h.svc.Stats.SentThen.Load() == 1 })
	h.reportDone(end(second))
	time.Sleep(300 * time.Millisecond) // room for a step that should not come
	if got := inFlight(); got != first.URL {
		t.Fatalf("in flight in the store: %q, want %q", got, first.URL)
	}

	// The first task's report: the step records its done and the second
	// task, then the second's done and the third task, not handed again.
	h.reportDone(end(first))
	testutil.Eventually(t, 5*time.Second, "the third task recorded", func() bool { return inFlight() == third.URL })
	if _, task, ok := inboxTask(t, in, 200*time.Millisecond); ok {
		t.Fatalf("a task handed after the third: %+v", task)
	}
	if n := h.svc.Stats.Done.Load(); n != 2 {
		t.Errorf("%d fetches counted done, want 2", n)
	}
	if n := h.svc.Stats.EndedEarly.Load(); n != 2 {
		t.Errorf("EndedEarly %d, want 2: the second task's end, heard before its record, counts once it is recorded", n)
	}
	if task, _, ok := h.task(100 * time.Millisecond); ok {
		t.Errorf("a task published to the stream: %+v", task)
	}
}

// A task whose fetch ended and whose report never came (dead-lettered in the
// fetcher, say) must not hold its host: when its lease runs out the
// partition reloads from the store, where the task is in flight, and the URL
// is issued again.
func TestEndedWithoutAReportIsIssuedAgain(t *testing.T) {
	in := bus.NewInbox("FETCH", 4)
	// A lease of 900 ms: time enough, on a loaded machine, for the end
	// to be heard before it runs out.
	h := start(t, Options{Inbox: in, TaskTTL: 300 * time.Millisecond, FetchTimeout: 300 * time.Millisecond, LeaseMargin: 300 * time.Millisecond})
	h.enqueue("http://a.example/1", "http://a.example/2")
	_, first, ok := inboxTask(t, in, 2*time.Second)
	if !ok {
		t.Fatal("no task handed")
	}
	// Recorded (the pop's step), with its successor reserved: the end
	// hands the successor.
	testutil.Eventually(t, 5*time.Second, "the next task handed at the fetch's end", func() bool {
		h.svc.Ended(messages.FetchDone{V: 1, TaskID: first.ID, Host: first.Host, URL: first.URL, Status: 200, FinishedAt: time.Now()})
		return h.svc.Stats.EndedEarly.Load() == 1
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		_, task, ok := inboxTask(t, in, time.Second)
		if ok && task.URL == first.URL && task.Attempt > 1 {
			return
		}
	}
	t.Fatalf("%s was not issued again after its lease ran out without a done report", first.URL)
}

// reportDone publishes fd as the fetcher's done report.
func (h *harness) reportDone(fd messages.FetchDone) {
	data, _ := json.Marshal(fd)
	testbus.Publish(h.t, h.js, h.names.FrontierDone(0), data, messages.HeaderKind, "done")
}

// A fetcher in another process says a fetch ended on core NATS
// (fetcher.EndsOnNATS): the partition hears it there and publishes the
// host's reserved next task before the done report, which the step that
// records that task still waits for. A hint for another partition, or one
// that does not decode, is dropped.
func TestAnEndHeardOnNATSHandsTheNextTask(t *testing.T) {
	h := start(t, Options{})
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3")
	first, _, ok := h.task(2 * time.Second)
	if !ok {
		t.Fatal("no first task")
	}
	ctx := context.Background()
	testutil.Eventually(t, 5*time.Second, "the first task recorded", func() bool {
		st, err := h.st.Load(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, hs := range st.Hosts {
			if hs.Host == "a.example" && hs.InFlight != nil && hs.InFlight.Task.ID == first.ID {
				return true
			}
		}
		return false
	})
	end := messages.FetchDone{V: 1, TaskID: first.ID, Partition: 0, Host: first.Host, URL: first.URL, Status: 200, FinishedAt: time.Now()}
	nc := h.js.Conn()
	wrong := end
	wrong.Partition = 1
	wrongData, _ := json.Marshal(wrong)
	for _, data := range [][]byte{[]byte("{not json"), wrongData} {
		if err := nc.Publish(h.names.Ended(0), data); err != nil {
			t.Fatal(err)
		}
	}
	if task, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatalf("a task after hints that were not the first task's end: %+v", task)
	}
	endData, _ := json.Marshal(end)
	if err := nc.Publish(h.names.Ended(0), endData); err != nil {
		t.Fatal(err)
	}
	second, _, ok := h.task(2 * time.Second)
	if !ok || second.URL != "http://a.example/2" {
		t.Fatalf("after the end on NATS: %+v, %v; want the host's next task", second, ok)
	}
	if n := h.svc.Stats.EndedEarly.Load(); n != 1 {
		t.Errorf("EndedEarly %d, want 1", n)
	}
	// The reports, in turn: the crawl goes on to its end, no task twice.
	h.reportDone(end)
	h.done(second, false)
	third, _, ok := h.task(2 * time.Second)
	if !ok || third.URL != "http://a.example/3" {
		t.Fatalf("after the reports: %+v, %v; want the third task", third, ok)
	}
	h.done(third, false)
	if task, _, ok := h.task(300 * time.Millisecond); ok {
		t.Fatalf("a task after the host's last: %+v", task)
	}
}

// The entry after a reservation is dropped, as the reservation is, by a URL
// ranked above it: the task handed from the reservation ends before its
// record and sends nothing; the shallower URL goes first once the reports
// have come.
func TestAShallowerURLDropsTheEntryAfterTheReservation(t *testing.T) {
	in := bus.NewInbox("FETCH", 4)
	h := start(t, Options{Inbox: in})
	deep := func(n int) messages.Link {
		return messages.Link{URL: fmt.Sprintf("http://a.example/%d", n), Depth: 2}
	}
	h.enqueueLinks(deep(1), deep(2), deep(3))
	_, first, ok := inboxTask(t, in, 2*time.Second)
	if !ok {
		t.Fatal("no task handed")
	}
	end := func(task messages.FetchTask) messages.FetchDone {
		return messages.FetchDone{V: 1, TaskID: task.ID, Partition: 0, Host: task.Host, URL: task.URL, Status: 200, FinishedAt: time.Now()}
	}
	var second messages.FetchTask
	testutil.Eventually(t, 5*time.Second, "the second task handed at the first's end", func() bool {
		h.svc.Ended(end(first))
		_, task, ok := inboxTask(t, in, 50*time.Millisecond)
		second = task
		return ok
	})
	if second.URL != "http://a.example/2" {
		t.Fatalf("second task %s, want /2", second.URL)
	}
	h.enqueueLinks(messages.Link{URL: "http://a.example/shallow", Depth: 1})
	testutil.Eventually(t, 5*time.Second, "the shallower URL queued", func() bool { return h.svc.Stats.Enqueued.Load() == 4 })
	h.svc.Ended(end(second))
	if _, task, ok := inboxTask(t, in, 300*time.Millisecond); ok {
		t.Fatalf("sent %s from the entry after the reservation, which a shallower URL outranks", task.URL)
	}
	if n := h.svc.Stats.SentThen.Load(); n != 0 {
		t.Errorf("SentThen %d, want 0", n)
	}
	h.reportDone(end(first))
	h.reportDone(end(second))
	_, next, ok := inboxTask(t, in, 3*time.Second)
	if !ok || next.URL != "http://a.example/shallow" {
		t.Fatalf("after both reports: %+v, %v; want the shallower URL first", next, ok)
	}
}
