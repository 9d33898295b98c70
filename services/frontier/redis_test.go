package frontier

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// redisOpener opens Redis stores under one prefix of the test's own, on the
// Redis testredis.AddrOrStandIn picks. Each store it opens is closed, and
// the prefix's keys deleted, when the test ends.
func redisOpener(t *testing.T) func() *store.Redis {
	t.Helper()
	addr := testredis.AddrOrStandIn(t)
	prefix := fmt.Sprintf("ftest%08x", rand.Uint32())
	t.Cleanup(func() { testredis.Drop(addr, prefix) })
	return func() *store.Redis {
		rs, err := store.OpenRedis(context.Background(), []string{addr}, false, prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		return rs
	}
}

// On Redis as on bbolt, a host's next task goes out from the reservation the
// pop of its previous task read, at that task's done report, before the
// step that records it; a shallower URL drops it.
func TestReservedNextTaskOnRedis(t *testing.T) {
	rs := redisOpener(t)()
	testReservedNextTask(t, startWith(t, Options{}, func(*store.Bolt, jetstream.JetStream, subjects.Names) store.Store { return rs }))
}

// gatedSteps is a Redis store whose steps, once closed, never reach Redis:
// they wait for released (a frontier killed while its step was on the way;
// a step is not cancelled by a stop, which waits for it).
type gatedSteps struct {
	*store.Redis
	closed   atomic.Bool
	released chan struct{}
}

func (g *gatedSteps) StepEarly(ctx context.Context, p int, r store.StepRequest, early func(store.StepResult)) (store.StepResult, error) {
	if g.closed.Load() {
		// Late, after the restart's own steps: a write of a batch
		// applied already changes nothing (the intake log's sequence).
		<-g.released
	}
	return g.Redis.StepEarly(ctx, p, r, early)
}

// A frontier on Redis that dies after publishing a host's reserved task and
// before the step that records it: Redis still has the previous task in
// flight and the reserved URL queued. The restart replays the done report,
// pops that URL under the same derived ID, finds the ID among the fetched
// tasks' reports, and publishes nothing again: the URL is fetched once, and
// the host goes on to its next URL.
func TestReservedTaskOnRedisSurvivesACrashBeforeItsStep(t *testing.T) {
	js, names := testbus.Start(t, 1)
	open := redisOpener(t)
	h := &harness{t: t, js: js, names: names}
	run := func(st store.Store) (kill, stop func()) {
		svc := New(Options{JS: js, Names: names, Store: st, Partitions: []int{0}, FetchTimeout: time.Second, MaxAttempts: 3,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- svc.Run(ctx) }()
		return cancel, func() { cancel(); <-done }
	}
	gated := &gatedSteps{Redis: open(), released: make(chan struct{})}
	kill, stop := run(gated)
	defer stop() // after the gate's release, below: it waits for the step
	defer close(gated.released)
	h.enqueue("http://a.example/1", "http://a.example/2", "http://a.example/3")
	first, _, ok := h.task(5 * time.Second)
	if !ok || first.URL != "http://a.example/1" {
		t.Fatalf("first task: %+v, %v", first, ok)
	}
	gated.closed.Store(true)
	h.done(first, false)
	second, _, ok := h.task(5 * time.Second)
	if !ok || second.URL != "http://a.example/2" {
		t.Fatalf("no task from the reservation while the step is held: %+v, %v", second, ok)
	}
	// The kill: the step recording the second task never runs, and this
	// frontier pulls nothing more.
	kill()
	// Its pull requests gone from the server, so that what comes next is
	// delivered to the restarted frontier, not to the dead one.
	testutil.Eventually(t, 5*time.Second, "the killed frontier's pull requests to end", func() bool {
		c, err := js.Consumer(context.Background(), names.StreamFrontier(), names.ConsumerFrontier(0))
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumWaiting == 0
	})
	// The intake the lost step held, unacked (redelivered after its ack
	// wait; given again here so as not to wait for it), and the second
	// task's report: fetched before the kill.
	h.done(first, false)
	h.done(second, false)
	_, stopAgain := run(open())
	defer stopAgain()
	var seen []string
	for {
		task, _, ok := h.task(5 * time.Second)
		if !ok {
			t.Fatalf("after the restart, the host's third task never came (tasks since: %v)", seen)
		}
		seen = append(seen, task.URL)
		if task.URL == "http://a.example/2" {
			t.Fatalf("the reserved URL was issued again after the restart (task %s, first %s)", task.ID, second.ID)
		}
		if task.URL == "http://a.example/3" {
			break
		}
	}
	h.done(messages.FetchTask{ID: "none", Host: "a.example"}, false) // stale: changes nothing
	testutil.Eventually(t, 5*time.Second, "the partition's queue empty", func() bool {
		st, err := open().Stats(context.Background(), []int{0})
		return err == nil && st.Queued == 0
	})
}
