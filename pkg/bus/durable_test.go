package bus_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// A work queue's consumer keeps its state in the server's memory, so a lone
// server that restarts forgets it. Pull creates it again and delivers what
// was not acked before the restart and what was published after it, and
// says so in the log.
func TestPullRecreatesAConsumerTheServerForgot(t *testing.T) {
	defer bus.SetPullExpiry(2 * time.Second)()
	srv := testbus.StartLone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	names, _ := subjects.New("lone")
	topo := bus.Topology{Names: names, Partitions: 1, DedupWindow: time.Minute, FetchAck: time.Minute}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	var logs testutil.SyncBuffer
	cons, err := bus.Consumer(ctx, js, names.StreamFetch(), names.ConsumerFetcher(), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !cons.CachedInfo().Config.MemoryStorage {
		t.Fatal("the fetch consumer keeps its state on file; the topology asks for memory")
	}
	publish := func(i int) {
		t.Helper()
		for {
			_, err := js.Publish(ctx, names.Fetch(0), []byte(fmt.Sprint("task ", i)))
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("publish task %d: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond) // reconnecting
		}
	}
	msgs, err := bus.Pull(ctx, cons, 4)
	if err != nil {
		t.Fatal(err)
	}
	next := func() jetstream.Msg {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(time.Minute):
			t.Fatalf("no message within a minute; log: %s", logs.String())
			return nil
		}
	}
	publish(1)
	publish(2)
	if m := next(); string(m.Data()) != "task 1" {
		t.Fatalf("first message %q", m.Data())
	} else if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	if m := next(); string(m.Data()) != "task 2" { // delivered, never acked
		t.Fatalf("second message %q", m.Data())
	}

	srv.Stop(0)
	srv.Start(0)
	publish(3)
	got := map[string]bool{}
	for len(got) < 2 {
		got[string(next().Data())] = true
	}
	if !got["task 2"] || !got["task 3"] {
		t.Fatalf("after the restart got %v, want the unacked task 2 and the new task 3", got)
	}
	if !strings.Contains(logs.String(), "created it again") {
		t.Errorf("nothing logged about the consumer created again: %q", logs.String())
	}
}
