package frontier

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
)

// heldSteps is a bbolt store whose steps that are not urgent wait until
// Hurry (or a minute): the group commit's pacing, made long enough that a
// host left waiting for it misses any test's timeout.
type heldSteps struct {
	*store.Bolt
	mu       sync.Mutex
	waiting  []chan struct{}
	released bool // steps no longer wait (the test is over)
}

func (s *heldSteps) StepEarly(ctx context.Context, p int, r store.StepRequest, early func(store.StepResult)) (store.StepResult, error) {
	s.mu.Lock()
	if !r.Hurry && !s.released {
		ch := make(chan struct{})
		s.waiting = append(s.waiting, ch)
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
	} else {
		s.mu.Unlock()
	}
	return s.Bolt.StepEarly(ctx, p, r, early)
}

func (s *heldSteps) Hurry() {
	s.release(false)
	s.Bolt.Hurry()
}

// release lets the steps waiting now go, and with forever those to come.
func (s *heldSteps) release(forever bool) {
	s.mu.Lock()
	s.released = s.released || forever
	for _, ch := range s.waiting {
		close(ch)
	}
	s.waiting = nil
	s.mu.Unlock()
}

// disallowed reports task's fetch as robots.txt forbidding it: nothing sent.
func (h *harness) disallowed(task messages.FetchTask) {
	h.reportDone(messages.FetchDone{V: 1, TaskID: task.ID, Host: task.Host, URL: task.URL, Disallowed: true})
}

// A URL robots.txt forbids costs its host no request, so the host is due
// again at once; the steps its next task waits for (the one pending, and the
// one that records the forbidden URL's task, published from a reservation)
// are hurried, not left to wait for company. They were not when the host
// rested longer than the pacing: after a 100 ms delay each forbidden URL
// held its host 30-60 ms in the politeness-bound benchmark.
func TestAForbiddenURLHurriesItsHostsNextTask(t *testing.T) {
	const delay = 250 * time.Millisecond // longer than twice the pacing
	var st *heldSteps
	h := startOn(t, Options{Delay: delay}, func(b *store.Bolt) store.Store {
		st = &heldSteps{Bolt: b}
		return st
	})
	t.Cleanup(func() { st.release(true) }) // before the harness stops
	h.enqueue("http://a.example/1", "http://a.example/private", "http://a.example/3")
	first, _, ok := h.task(5 * time.Second)
	if !ok {
		t.Fatal("no first task")
	}
	h.done(first, false)
	forbidden, _, ok := h.task(5 * time.Second)
	if !ok || forbidden.URL != "http://a.example/private" {
		t.Fatalf("second task %q (ok %v), want http://a.example/private", forbidden.URL, ok)
	}
	h.disallowed(forbidden)
	next, _, ok := h.task(5 * time.Second)
	if !ok {
		t.Fatal("the host's next task waited for a step that was not hurried")
	}
	if next.URL != "http://a.example/3" {
		t.Errorf("next task %q, want http://a.example/3", next.URL)
	}
}

// hurryCount is an early store that counts Hurry; nothing else is called.
type hurryCount struct {
	store.Store
	store.Early
	n int
}

func (h *hurryCount) PaceInterval() time.Duration { return 30 * time.Millisecond }
func (h *hurryCount) Hurry()                      { h.n++ }

// Under congestion (the cores, not the delay, bound the crawl) a forbidden
// URL of a host that rests longer than the pacing costs no commit of its
// own: the host's next turn waits in the shared queues anyway. A host that
// rests briefly is hurried all the same.
func TestAForbiddenURLIsNotHurriedUnderCongestion(t *testing.T) {
	st := &hurryCount{}
	pt := &partition{s: &Service{o: Options{Delay: 100 * time.Millisecond, Store: st}}, hosts: map[string]*host{}}
	slow, quick := pt.host("slow.example"), pt.host("quick.example")
	slow.rest, slow.queued = 100*time.Millisecond, 3
	quick.rest, quick.queued = 10*time.Millisecond, 3
	forbidden := func(host string) messages.FetchDone {
		return messages.FetchDone{Host: host, Disallowed: true}
	}
	now := time.Now()
	pt.hurryFor(forbidden("slow.example"), now)
	if st.n != 1 {
		t.Fatalf("quiet partition: %d hurries, want 1", st.n)
	}
	pt.congestion = congestion{last: 6 * time.Millisecond, base: time.Millisecond}
	pt.hurryFor(forbidden("slow.example"), now)
	if st.n != 1 {
		t.Errorf("congested partition: a forbidden URL of a resting host was hurried")
	}
	pt.hurryFor(forbidden("quick.example"), now)
	if st.n != 2 {
		t.Errorf("congested partition: a forbidden URL of a host resting 10 ms was not hurried")
	}
}

// Links for an idle host that come while a step is pending hurry that step:
// the host's next task comes from the step after it. Here the pending step
// holds the done report of the host's only task, issues nothing and would
// wait for company; at a crawl's start the seed's host waited so for the
// seed's links.
func TestLinksForAnIdleHostHurryThePendingStep(t *testing.T) {
	var st *heldSteps
	h := startOn(t, Options{}, func(b *store.Bolt) store.Store {
		st = &heldSteps{Bolt: b}
		return st
	})
	t.Cleanup(func() { st.release(true) }) // before the harness stops
	h.enqueue("http://a.example/1")
	first, _, ok := h.task(5 * time.Second)
	if !ok {
		t.Fatal("no first task")
	}
	h.done(first, false)
	testutil.Eventually(t, 5*time.Second, "the done report's step held for company", st.holding)
	h.enqueue("http://a.example/2")
	next, _, ok := h.task(5 * time.Second)
	if !ok {
		t.Fatal("the idle host's task waited for a step that was not hurried")
	}
	if next.URL != "http://a.example/2" {
		t.Errorf("next task %q, want http://a.example/2", next.URL)
	}
}

// holding tells whether a step waits for Hurry.
func (s *heldSteps) holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting) > 0
}
