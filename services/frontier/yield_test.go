package frontier

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/messages"
)

func TestCongestionIsTheTurnBeyondTheQuietest(t *testing.T) {
	var c congestion
	issued := time.Unix(1000, 0)
	task := messages.FetchTask{IssuedAt: issued}
	fetched := messages.FetchDone{Status: 200, Duration: 10 * time.Millisecond}
	window := func(task messages.FetchTask, after time.Duration) {
		for range congestionWindow {
			c.observe(task, fetched, issued.Add(after))
		}
	}
	window(task, 15*time.Millisecond) // a quiet start: 5 ms beyond the fetch
	if c.last != 5*time.Millisecond || c.base != 5*time.Millisecond {
		t.Fatalf("after a window of 5 ms turns: last %s, base %s; want 5 ms each", c.last, c.base)
	}
	window(task, 70*time.Millisecond)
	if c.last != 60*time.Millisecond || c.base != 5*time.Millisecond {
		t.Fatalf("after a window of 60 ms turns: last %s, base %s; want 60 ms and 5 ms", c.last, c.base)
	}
	// A task issued ahead turns from its not-before time, not its issue.
	window(messages.FetchTask{IssuedAt: issued, NotBefore: issued.Add(50 * time.Millisecond)}, 65*time.Millisecond)
	if c.last != 5*time.Millisecond {
		t.Fatalf("tasks due 50 ms after their issue, done 15 ms later with 10 ms fetches: last %s, want 5 ms", c.last)
	}
	// Reports of no request (robots.txt forbade the URL) took no turn.
	for range 2 * congestionWindow {
		c.observe(task, messages.FetchDone{Disallowed: true}, issued.Add(time.Second))
	}
	if c.n != 0 || c.last != 5*time.Millisecond {
		t.Fatalf("reports that sent nothing were counted: %d in the window, last %s", c.n, c.last)
	}
}

func TestShorterQueuesRestLongerUnderCongestion(t *testing.T) {
	const rest = 100 * time.Millisecond
	c := congestion{last: 25 * time.Millisecond, base: 5 * time.Millisecond, longest: 400}
	cases := []struct {
		queued int
		rest   time.Duration
		want   time.Duration
	}{
		{400, rest, 0},                     // the longest queue: no extra
		{500, rest, 0},                     // longer than at the last gauge
		{200, rest, 20 * time.Millisecond}, // half: gain 2 x 20 ms x 1/2
		{0, rest, 40 * time.Millisecond},   // nothing left: the full gain
		{0, 0, 0},                          // no rest (no delay): nothing added
		{0, 30 * time.Millisecond, 30 * time.Millisecond}, // at most its own rest again
	}
	for _, tc := range cases {
		if got := c.extra(tc.queued, tc.rest); got != tc.want {
			t.Errorf("extra(queued %d, rest %s) = %s, want %s", tc.queued, tc.rest, got, tc.want)
		}
	}
	quiet := congestion{last: 5 * time.Millisecond, base: 5 * time.Millisecond, longest: 400}
	if got := quiet.extra(0, rest); got != 0 {
		t.Errorf("extra without congestion = %s, want 0", got)
	}
}

// TestLongestQueueTurnsFaster plays a fetcher that answers at once for a
// while, then only after its tasks have queued 80 ms: once the partition has
// measured that and gauged its queues, hosts with a shorter queue than the
// longest rest longer than the delay, the longest does not.
func TestLongestQueueTurnsFaster(t *testing.T) {
	// Restored after the service has stopped: cleanups run last first.
	w := congestionWindow
	t.Cleanup(func() { congestionWindow = w })
	congestionWindow = 8
	const delay, queueing, quiet = 50 * time.Millisecond, 80 * time.Millisecond, 24
	h := start(t, Options{Delay: delay})
	var urls []string
	for i := range 80 {
		urls = append(urls, fmt.Sprintf("http://long.example/%d", i))
	}
	for _, host := range []string{"a", "b", "c"} {
		for i := range 30 {
			urls = append(urls, fmt.Sprintf("http://short-%s.example/%d", host, i))
		}
	}
	h.enqueue(urls...)

	var mu sync.Mutex
	var answered sync.WaitGroup
	defer answered.Wait()
	doneAt := map[string]time.Time{}
	var congestedAt time.Time
	gaps := map[bool][]time.Duration{} // by long or not: a done report to the host's next task, once measured and gauged
	for n := 0; ; n++ {
		task, at, ok := h.task(2 * time.Second)
		if !ok {
			break
		}
		long := task.Host == "long.example"
		mu.Lock()
		if n == quiet {
			congestedAt = at
		}
		if prev, ok := doneAt[task.Host]; ok && !congestedAt.IsZero() && at.Sub(congestedAt) > 1500*time.Millisecond {
			gaps[long] = append(gaps[long], at.Sub(prev))
		}
		mu.Unlock()
		wait := time.Duration(0)
		if n >= quiet {
			wait = queueing
		}
		answered.Add(1)
		go func() {
			defer answered.Done()
			time.Sleep(wait)
			data, _ := json.Marshal(messages.FetchDone{V: 1, TaskID: task.ID, Host: task.Host, URL: task.URL, Status: 200, Duration: time.Millisecond})
			mu.Lock()
			doneAt[task.Host] = time.Now()
			mu.Unlock()
			testbus.Publish(h.t, h.js, h.names.FrontierDone(0), data, messages.HeaderKind, "done")
		}()
		if !congestedAt.IsZero() && at.Sub(congestedAt) > 4*time.Second {
			break
		}
	}
	answered.Wait()
	mu.Lock()
	defer mu.Unlock()
	mean := func(long bool) time.Duration {
		g := gaps[long]
		if len(g) < 3 {
			t.Fatalf("%d gaps (long queue: %v) once congested and gauged, want at least 3 (all: %v)", len(g), long, gaps)
		}
		var sum time.Duration
		for _, d := range g {
			sum += d
			if d < delay {
				t.Errorf("a host (long queue: %v) rested %s, less than the delay %s", long, d, delay)
			}
		}
		return sum / time.Duration(len(g))
	}
	if h.svc.Stats.Yielded.Load() == 0 {
		t.Error("no rest counted as lengthened")
	}
	l, s := mean(true), mean(false)
	if s-l < 25*time.Millisecond {
		t.Errorf("mean rest of the short queues %s, of the long one %s: want the short ones resting longer, by up to the delay again", s, l)
	}
}
