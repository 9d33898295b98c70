package frontier

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// startHanding starts a frontier with an inbox of size, enqueues urls and
// waits for the first task handed through it.
func startHanding(t *testing.T, size int, urls ...string) (*harness, *bus.Inbox, jetstream.Msg, messages.FetchTask) {
	t.Helper()
	in := bus.NewInbox("FETCH", size)
	h := start(t, Options{Inbox: in})
	h.enqueue(urls...)
	m, task, ok := inboxTask(t, in, 2*time.Second)
	if !ok {
		t.Fatal("no task handed in process")
	}
	return h, in, m, task
}

// inboxTask waits for a task handed through in, or returns ok=false.
func inboxTask(t *testing.T, in *bus.Inbox, timeout time.Duration) (jetstream.Msg, messages.FetchTask, bool) {
	t.Helper()
	select {
	case m := <-in.Messages():
		var task messages.FetchTask
		if err := messages.Decode(m.Data(), &task); err != nil {
			t.Fatal(err)
		}
		return m, task, true
	case <-time.After(timeout):
		return nil, messages.FetchTask{}, false
	}
}

// With an inbox (trawler run without --nats-listen) the frontier hands its
// tasks to the fetcher in process while it has room, and publishes them to
// the fetch stream when it has none. A task handed and not yet done counts
// as sent when the partition loads again in the same process; after a crash
// (a new process: a new, empty inbox) it is nowhere, and the load sends it
// again, under its ID.
func TestInboxTasksAndTheirRecovery(t *testing.T) {
	h, in, m, first := startHanding(t, 4, "http://a.example/1", "http://a.example/2")
	if task, _, ok := h.task(200 * time.Millisecond); ok {
		t.Fatalf("a task published with room in the inbox: %+v", task)
	}
	h.stop()

	// The same process, the partition loaded again: the task handed is
	// still the fetcher's, neither handed again nor published.
	ctx, cancel := context.WithCancel(context.Background())
	reloaded := New(h.svc.o)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = reloaded.Run(ctx) }()
	if _, task, ok := inboxTask(t, in, 500*time.Millisecond); ok {
		t.Fatalf("a held task handed again after a reload: %+v", task)
	}
	if task, _, ok := h.task(200 * time.Millisecond); ok {
		t.Fatalf("a held task published after a reload: %+v", task)
	}
	cancel()
	<-stopped

	// A crash: nothing of the inbox is left. The task in flight, in no
	// stream and not reported done, is sent again.
	fresh := bus.NewInbox("FETCH", 4)
	o := h.svc.o
	o.Inbox = fresh
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	restarted := New(o)
	go func() { _ = restarted.Run(ctx) }()
	_, again, ok := inboxTask(t, fresh, 3*time.Second)
	if !ok || again.ID != first.ID {
		t.Fatalf("after a crash the lost task came back as %+v (%v), want task %s", again, ok, first.ID)
	}
	_ = m.Ack()
	h.done(again, false)
	_, next, ok := inboxTask(t, fresh, 3*time.Second)
	if !ok || next.URL != "http://a.example/2" {
		t.Fatalf("after the done report: %+v, %v", next, ok)
	}
}

// What the inbox has no room for goes to the fetch stream.
func TestInboxFullPublishes(t *testing.T) {
	h, _, _, handed := startHanding(t, 1, "http://a.example/1", "http://b.example/1")
	if published, _, ok := h.task(2 * time.Second); !ok || published.Host == handed.Host {
		t.Fatalf("the other host's task was not published when the inbox was full: %+v, %v", published, ok)
	}
	if n := h.svc.Stats.Handed.Load(); n != 1 {
		t.Fatalf("%d tasks counted handed, want 1", n)
	}
}
