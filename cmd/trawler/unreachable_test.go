package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/services/fetcher"
)

// status lists the origins whose robots.txt is unreachable from the robots
// bucket's "u." records: retried ones with the time they have left, soonest
// first, then the given-up ones; other keys of the bucket are not read.
func TestStatusShowsUnreachableHosts(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: names.RobotsBucket()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	put := func(key string, v any) {
		data, _ := json.Marshal(v)
		if _, err := kv.Put(ctx, key, data); err != nil {
			t.Fatal(err)
		}
	}
	u := func(origin string) string { return fetcher.UnreachablePrefix + hex.EncodeToString([]byte(origin)) }
	put(u("http://late.test"), fetcher.UnreachableRecord{Origin: "http://late.test", Error: "HTTP 503", Failures: 1, Of: 3,
		LastTry: now, GiveUpAt: now.Add(60 * time.Second)})
	put(u("http://soon.test"), fetcher.UnreachableRecord{Origin: "http://soon.test", Error: "connection refused", Failures: 2, Of: 3,
		LastTry: now, GiveUpAt: now.Add(20 * time.Second)})
	put(u("http://gone.test"), fetcher.UnreachableRecord{Origin: "http://gone.test", Error: "lookup gone.test: no such host", Failures: 3, Of: 3,
		LastTry: now, GaveUp: true})
	put("o."+hex.EncodeToString([]byte("http://fine.test")), map[string]any{"status": 200}) // an origin that answered

	got := robotsUnreachable(ctx, js, names.RobotsBucket(), now)
	if len(got) != 3 || got[0].Origin != "http://soon.test" || got[1].Origin != "http://late.test" || got[2].Origin != "http://gone.test" {
		t.Fatalf("unreachable hosts %+v; want soon, late, gone", got)
	}
	if got[0].GiveUpIn != 20 || got[1].GiveUpIn != 60 || !got[2].GaveUp || got[2].GiveUpIn != 0 {
		t.Errorf("times left %+v", got)
	}
	line := unreachableLine(got)
	for _, want := range []string{"2 retrying", "http://soon.test (connection refused; 2 of 3 tries; given up in 20s)",
		"http://late.test (HTTP 503; 1 of 3 tries; given up in 1m0s)", "1 given up", "http://gone.test (lookup gone.test: no such host)"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	// A stall names the answer of the origin tried last (the most time left).
	if n, settled, last := retryingRobots(got); n != 2 || settled != time.Minute || last != "http://late.test: HTTP 503" {
		t.Errorf("retryingRobots: %d, %v, %q; want 2, 1m0s and late.test's answer", n, settled, last)
	}
	// status --wait's one line says how many are retried, as run's does.
	var b strings.Builder
	if err := show(&b, statusReport{At: now, Unreachable: got}, false, true); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.TrimSpace(b.String()), "| robots unreachable: 2 retrying") {
		t.Errorf("status line %q: want the 2 retried origins at its end", b.String())
	}
	if robotsUnreachable(ctx, js, "NO_SUCH_BUCKET", now) != nil {
		t.Error("a missing bucket (no robots.txt fetched yet) should list nothing")
	}
}
