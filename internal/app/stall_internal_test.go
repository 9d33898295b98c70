package app

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/store"
)

// A crawl that stops moving says what it waits for, once per interval while
// it stands still, and nothing while it moves or once it is idle.
func TestStallNoticeSaysWhatTheCrawlWaitsFor(t *testing.T) {
	var buf testutil.SyncBuffer
	n := stallNotice{log: slog.New(slog.NewTextHandler(&buf, nil)), after: 30 * time.Second}
	t0 := time.Now()
	snap := func(at time.Duration, issued uint64) crawlstate.Snapshot {
		return crawlstate.Snapshot{At: t0.Add(at), Store: store.Stats{InFlight: 1, Issued: issued},
			Fetch: crawlstate.StreamState{Msgs: 1, LastSeq: 7}}
	}
	for i := range 20 { // moving: a task issued every second
		n.see(snap(time.Duration(i)*time.Second, uint64(i)))
	}
	if buf.Len() != 0 {
		t.Fatalf("said while the crawl moved: %s", buf.String())
	}
	for i := 20; i <= 80; i++ { // still from 19 s on
		n.see(snap(time.Duration(i)*time.Second, 19))
	}
	out := buf.String()
	if got := strings.Count(out, "has not moved"); got != 2 { // at 49 s and 79 s
		t.Errorf("said %d times in 61 s still, want 2:\n%s", got, out)
	}
	for _, want := range []string{"not moved for 30s", "1 tasks in flight", "1 tasks in the fetch stream"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "URLs queued") {
		t.Errorf("%q names an empty place", out)
	}
	// Idle: the crawl is over, not stuck.
	var quiet testutil.SyncBuffer
	idle := stallNotice{log: slog.New(slog.NewTextHandler(&quiet, nil)), after: 30 * time.Second}
	for i := range 100 {
		idle.see(crawlstate.Snapshot{At: t0.Add(time.Duration(i) * time.Second)})
	}
	if quiet.Len() != 0 {
		t.Errorf("said of an idle crawl: %s", quiet.String())
	}
}
