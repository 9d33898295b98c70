package bus_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/bus"
)

// NATS 2.9 drops a pull request that has expired when a message comes for
// it without a word to the client (nats-server v2.9.10 consumer.go,
// nextWaiting), which counts the request as standing and asks for nothing
// more until its heartbeat monitor gives up on it: two heartbeats. At the
// client's default heartbeat, half the expiry, a host partition of the
// services stood still for 10 s some seconds into a crawl. So every pull
// request asks for a heartbeat of a second, whatever its expiry: read off
// the wire, as the server gets them.
func TestPullRequestsAskForAShortHeartbeat(t *testing.T) {
	js, _ := testbus.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe.work"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "PROBE", jetstream.ConsumerConfig{Durable: "probe", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	nc := js.Conn()
	requests, err := nc.SubscribeSync("$JS.API.CONSUMER.MSG.NEXT.PROBE.probe")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, start := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := bus.Pull(ctx, cons, 16); return err },
		func(ctx context.Context) error { _, err := bus.PullBatches(ctx, cons, 256); return err },
	} {
		pulling, stop := context.WithCancel(ctx)
		if err := start(pulling); err != nil {
			t.Fatal(err)
		}
		m, err := requests.NextMsg(5 * time.Second)
		stop()
		if err != nil {
			t.Fatalf("no pull request seen: %v", err)
		}
		var req struct {
			Batch     int           `json:"batch"`
			Expires   time.Duration `json:"expires"`
			Heartbeat time.Duration `json:"idle_heartbeat"`
		}
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Fatalf("pull request %s: %v", m.Data, err)
		}
		if req.Heartbeat <= 0 || req.Heartbeat > time.Second || req.Expires < 10*req.Heartbeat {
			t.Errorf("pull request %s: heartbeat %v, expiry %v; want a heartbeat of at most 1s and an expiry of ten or more",
				m.Data, req.Heartbeat, req.Expires)
		}
	}
}
