package fetcher

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// An origin whose robots.txt does not answer gets a "u." record saying how
// many tries it had and when it will be given up; the record is deleted when
// robots.txt answers, and marks the origin given up after the last try.
func TestUnreachableRecords(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	const retry = 200 * time.Millisecond
	c, err := openRobots(ctx, js, names, NewHTTPClient(HTTPOptions{}), "Trawler/0.1", time.Hour, retry)
	if err != nil {
		t.Fatal(err)
	}
	var clock testutil.Clock
	c.now = clock.Now
	status := 503
	c.get = func(ctx context.Context, rawURL string) Response { return Response{Status: status} }
	kv, err := js.KeyValue(ctx, names.RobotsBucket())
	if err != nil {
		t.Fatal(err)
	}
	read := func(origin string) (UnreachableRecord, bool) {
		e, err := kv.Get(ctx, UnreachablePrefix+hex.EncodeToString([]byte(origin)))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return UnreachableRecord{}, false
		}
		if err != nil {
			t.Fatal(err)
		}
		var r UnreachableRecord
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			t.Fatal(err)
		}
		return r, true
	}

	// a: 503, then it answers.
	if v, err := c.check(ctx, "http://a.test/x"); err != nil || v.RetryAfter == 0 {
		t.Fatalf("first check: %+v %v", v, err)
	}
	r, ok := read("http://a.test")
	if !ok || r.Failures != 1 || r.Of != 3 || r.GaveUp || r.Error != "HTTP 503" ||
		!r.GiveUpAt.Equal(r.LastTry.Add(2*retry)) || !r.NextTry.Equal(r.LastTry.Add(retry)) {
		t.Fatalf("record after one 503: %+v (found %v)", r, ok)
	}
	if u := c.unreachableNow(); u.Retrying != 1 || u.GivenUp != 0 || !u.LastGiveUp.Equal(r.GiveUpAt) || u.Last != "http://a.test: HTTP 503" {
		t.Errorf("unreachableNow %+v", u)
	}
	clock.Advance(retry)
	status = 200
	if v, err := c.check(ctx, "http://a.test/x"); err != nil || !v.Allowed {
		t.Fatalf("after it answers: %+v %v", v, err)
	}
	if r, ok := read("http://a.test"); ok {
		t.Errorf("record kept after robots.txt answered: %+v", r)
	}

	// b: three 503s in a row: given up.
	status = 503
	for i := 1; i <= 3; i++ {
		v, err := c.check(ctx, "http://b.test/x")
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := read("http://b.test"); r.Failures != i {
			t.Fatalf("try %d: record %+v", i, r)
		}
		if i < 3 {
			clock.Advance(max(v.RetryAfter, retry))
		}
	}
	if r, _ := read("http://b.test"); !r.GaveUp || !r.GiveUpAt.IsZero() {
		t.Errorf("record after 3 tries: %+v", r)
	}
	if u := c.unreachableNow(); u.Retrying != 0 || u.GivenUp != 1 || u.Last != "" {
		t.Errorf("unreachableNow %+v, want 0 retrying, 1 given up, no last answer of one retried", u)
	}
}

// A robots.txt that does not answer takes its time to say so (a header
// timeout); the next try comes --robots-retry after that answer, not after
// the check began: the host rested the timeout longer than asked.
func TestRobotsRetryCountsFromTheAnswer(t *testing.T) {
	js, names := testbus.Start(t, 1)
	ctx := context.Background()
	const retry, timeout = 30 * time.Second, 10 * time.Second
	c, err := openRobots(ctx, js, names, NewHTTPClient(HTTPOptions{}), "Trawler/0.1", time.Hour, retry)
	if err != nil {
		t.Fatal(err)
	}
	var clock testutil.Clock
	c.now = clock.Now
	c.get = func(ctx context.Context, rawURL string) Response {
		clock.Advance(timeout) // no response headers within the timeout
		return Response{Err: errors.New("no response headers within 10s")}
	}
	v, err := c.check(ctx, "http://hang.test/x")
	if err != nil {
		t.Fatal(err)
	}
	if v.RetryAfter != retry {
		t.Errorf("retry after %v, want %v (--robots-retry from the answer)", v.RetryAfter, retry)
	}
}
