package bus_test

import (
	"context"
	"encoding/json"
	"strings"
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

// A consumer that stops taking messages for a while (a fetcher held back
// by the parser's backlog, a busy parser) must lose none of those pulled
// for it. The client's iterator keeps a pull request's messages and the
// server's idle heartbeats in one channel, as long as the messages asked
// for: with the reader away, heartbeats filled it and the next message was
// dropped ("slow consumer"), to come back only after its ack wait (30 s
// in a crawl: the services stood still that long).
func TestPullLosesNothingWhileItsReaderIsAway(t *testing.T) {
	defer bus.SetPullTiming(30*time.Second, 500*time.Millisecond)() // the shortest heartbeat NATS takes
	js, _ := testbus.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name  string
		start func(context.Context, jetstream.Consumer) (<-chan jetstream.Msg, error)
		first int // messages that leave a pull request open while the reader is away
	}{
		{"Pull", func(ctx context.Context, c jetstream.Consumer) (<-chan jetstream.Msg, error) {
			return bus.Pull(ctx, c, 4)
		}, 1},
		{"PullBatches", func(ctx context.Context, c jetstream.Consumer) (<-chan jetstream.Msg, error) {
			return bus.PullBatches(ctx, c, 4)
		}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A stream and consumer of its own: a request the other
			// case's pull left standing must not take this one's messages.
			stream, subject := "AWAY_"+strings.ToUpper(tc.name), "away."+tc.name
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
				t.Fatal(err)
			}
			cons, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "away", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			pulling, stop := context.WithCancel(ctx)
			defer stop()
			msgs, err := tc.start(pulling, cons)
			if err != nil {
				t.Fatal(err)
			}
			publish := func(data string) {
				if _, err := js.Publish(ctx, subject, []byte(data)); err != nil {
					t.Fatal(err)
				}
			}
			// Messages enough to hold the reader's side full, with a pull
			// request left open; the reader away for six heartbeats; then
			// more messages.
			for range tc.first {
				publish("early")
			}
			time.Sleep(3 * time.Second)
			for range 3 {
				publish("late")
			}
			all := tc.first + 3
			for want := 1; want <= all; want++ {
				select {
				case m := <-msgs:
					if err := m.Ack(); err != nil {
						t.Fatal(err)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("message %d of %d did not come within 5s of the reader's return (dropped, back only after its ack wait)", want, all)
				}
			}
		})
	}
}
