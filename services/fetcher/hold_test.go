package fetcher

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// heldMsg is a task message with just the headers holdUntilDue reads.
type heldMsg struct {
	jetstream.Msg
	h nats.Header
}

func (m heldMsg) Headers() nats.Header { return m.h }

func taskAt(notBefore time.Time) jetstream.Msg {
	h := nats.Header{}
	if !notBefore.IsZero() {
		h.Set(messages.HeaderNotBefore, strconv.FormatInt(notBefore.UnixNano(), 10))
	}
	return heldMsg{h: h}
}

// Tasks reach the workers in the order of their not-before times, none
// early; tasks without one (or with a malformed one) pass at once.
func TestHoldUntilDue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make(chan jetstream.Msg, 4)
	start := time.Now()
	late, soon := start.Add(150*time.Millisecond), start.Add(60*time.Millisecond)
	in <- taskAt(late)
	in <- taskAt(soon)
	in <- taskAt(time.Time{})
	in <- heldMsg{h: nats.Header{messages.HeaderNotBefore: []string{"soon"}}}
	close(in)
	out := holdUntilDue(ctx, in)
	var got []time.Time
	for m := range out {
		if nb := notBefore(m); time.Now().Before(nb) {
			t.Errorf("task due at %v passed %v early", nb, nb.Sub(time.Now()))
		}
		got = append(got, notBefore(m))
	}
	want := []time.Time{{}, {}, time.Unix(0, soon.UnixNano()), time.Unix(0, late.UnixNano())}
	if len(got) != len(want) {
		t.Fatalf("%d tasks passed, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("task %d: due %v, want %v", i, got[i], want[i])
		}
	}
}

// On shutdown, held tasks are let go (left to redelivery) and the stage
// closes its output.
func TestHoldUntilDueStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan jetstream.Msg, 1)
	in <- taskAt(time.Now().Add(time.Hour))
	close(in)
	out := holdUntilDue(ctx, in)
	cancel()
	select {
	case m, ok := <-out:
		if ok {
			t.Fatalf("held task passed on shutdown: %v", m)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("output not closed after shutdown")
	}
}

// A fetcher whose clock runs ahead of the frontier's sees the task's
// not-before time passed already; Trawler-Hold-For, the frontier's own
// measure of how far ahead it published the task, holds it all the same.
func TestHoldForHoldsWhateverTheClocksSay(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make(chan jetstream.Msg, 2)
	m := taskAt(time.Now().Add(-time.Second)) // by this clock, due a second ago
	m.(heldMsg).h.Set(messages.HeaderHoldFor, strconv.FormatInt(int64(120*time.Millisecond), 10))
	start := time.Now()
	in <- m
	in <- heldMsg{h: nats.Header{messages.HeaderHoldFor: []string{"-5"}}} // malformed: not held
	close(in)
	out := holdUntilDue(ctx, in)
	first := <-out
	if holdFor(first) != 0 {
		t.Errorf("the task with a malformed hold did not pass first")
	}
	<-out
	if waited := time.Since(start); waited < 120*time.Millisecond {
		t.Errorf("task held %v, want at least its Trawler-Hold-For of 120ms", waited)
	}
}
