package crawlstate

import (
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/store"
)

// A crawl that stops moving says what it waits for, once per interval while
// it stands still, and nothing while it moves or once it is idle.
func TestStallSaysWhatTheCrawlWaitsFor(t *testing.T) {
	n := Stall{After: 30 * time.Second}
	t0 := time.Now()
	snap := func(at time.Duration, issued uint64) Snapshot {
		return Snapshot{At: t0.Add(at), Store: store.Stats{InFlight: 1, Issued: issued},
			Fetch: StreamState{Msgs: 1, LastSeq: 7}}
	}
	var said []string
	see := func(n *Stall, s Snapshot) {
		if line, ok := n.See(s); ok {
			said = append(said, line)
		}
	}
	for i := range 20 { // moving: a task issued every second
		see(&n, snap(time.Duration(i)*time.Second, uint64(i)))
	}
	if len(said) != 0 {
		t.Fatalf("said while the crawl moved: %q", said)
	}
	for i := 20; i <= 80; i++ { // still from 19 s on
		see(&n, snap(time.Duration(i)*time.Second, 19))
	}
	if len(said) != 2 { // at 49 s and 79 s
		t.Errorf("said %d times in 61 s still, want 2: %q", len(said), said)
	}
	out := strings.Join(said, "\n")
	for _, want := range []string{"not moved for 30s", "not moved for 1m0s", "1 tasks in flight", "1 tasks in the fetch stream"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "URLs queued") {
		t.Errorf("%q names an empty place", out)
	}
	// Idle: the crawl is over, not stuck.
	said = nil
	idle := Stall{After: 30 * time.Second}
	for i := range 100 {
		see(&idle, Snapshot{At: t0.Add(time.Duration(i) * time.Second)})
	}
	if len(said) != 0 {
		t.Errorf("said of an idle crawl: %q", said)
	}
}

// A stall near a crawl's end most often waits for origins whose robots.txt
// is unreachable: the line says so, and how long they may still take.
func TestRobotsWaitSaysWhatUnreachableOriginsHold(t *testing.T) {
	if got := RobotsWait(0, time.Minute, "http://a.test: HTTP 503"); got != "" {
		t.Errorf("nothing retrying: %q, want nothing", got)
	}
	got := RobotsWait(3, 64*time.Second+400*time.Millisecond, "")
	for _, want := range []string{"3 origins retry an unreachable robots.txt", "given up (3 tries, --robots-retry apart)", "all settled within 1m4s"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "last answer") {
		t.Errorf("no answer known, yet the line names one: %q", got)
	}
	if got := RobotsWait(1, 0, ""); strings.Contains(got, "settled") || !strings.Contains(got, "1 origin retries an") {
		t.Errorf("one origin, no time known: %q", got)
	}
	// The answer says what to fix: a DNS server that does not answer.
	last := "http://nohost.test: lookup nohost.test on 127.0.0.1:9: server misbehaving"
	if got := RobotsWait(1, time.Minute, last); !strings.HasSuffix(got, "; the last answer: "+last) {
		t.Errorf("with the last answer: %q", got)
	}
}
