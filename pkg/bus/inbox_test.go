package bus_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
)

func inboxMsgs(subject string, ids ...string) ([]*nats.Msg, []string) {
	msgs := make([]*nats.Msg, len(ids))
	for i, id := range ids {
		msgs[i] = nats.NewMsg(subject)
		msgs[i].Data = []byte(id)
	}
	return msgs, ids
}

// held reports whether id is among the inbox's messages on fetch.1 not yet
// acked or terminated.
func held(in *bus.Inbox, id string) bool { return slices.Contains(in.HeldOn("fetch.1"), id) }

func receive(t *testing.T, ch <-chan jetstream.Msg) jetstream.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received in 5s")
		return nil
	}
}

// The inbox stands in for a work-queue stream between two services of one
// process: the sender must know what it holds (a reloading frontier counts
// a handed task as sent), it never blocks the sender (full: refused, all or
// nothing), and a handed-back message comes again, counted as a
// redelivery, while an acked or terminated one is gone.
func TestInboxHandsHoldsAndRedelivers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := bus.NewInbox("FETCH", 2)
	pulled := make(chan jetstream.Msg)

	// Before Merge: its goroutine takes a message into its hands as soon
	// as one comes, which leaves room in the inbox (a CI run saw the third
	// message taken).
	if n := in.Hand(inboxMsgs("fetch.1", "a", "b", "c")); n != 2 {
		t.Fatalf("an empty inbox of two took %d of three messages", n)
	}
	if held(in, "c") {
		t.Fatal("a message not taken is held")
	}
	if n := in.Hand(inboxMsgs("fetch.2", "c")); n != 0 {
		t.Fatal("a full inbox took a message")
	}
	if got := in.HeldOn("fetch.1"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"a", "b"}) {
		t.Fatalf("held on fetch.1: %v, want a and b", got)
	}
	out := in.Merge(ctx, pulled)

	a := receive(t, out)
	if string(a.Data()) != "a" || a.Subject() != "fetch.1" {
		t.Fatalf("first message %q on %s, want a on fetch.1", a.Data(), a.Subject())
	}
	md, err := a.Metadata()
	if err != nil || md.Stream != "FETCH" || md.NumDelivered != 1 {
		t.Fatalf("metadata %+v, %v: want stream FETCH, delivered once", md, err)
	}
	_ = a.NakWithDelay(10 * time.Millisecond)
	b := receive(t, out)
	_ = b.Ack()
	if held(in, "b") || !held(in, "a") {
		t.Fatal("an acked message still held, or a handed-back one not")
	}
	again := receive(t, out)
	if string(again.Data()) != "a" {
		t.Fatalf("got %q, want a again", again.Data())
	}
	if md, _ := again.Metadata(); md.NumDelivered != 2 {
		t.Fatalf("redelivery counted %d deliveries, want 2", md.NumDelivered)
	}
	_ = again.Term()
	_ = again.Nak() // after Term: nothing comes back
	if held(in, "a") {
		t.Fatal("a terminated message still held")
	}

	// The stream's messages come through the same channel.
	go func() { pulled <- a }()
	if m := receive(t, out); m != a {
		t.Fatal("a pulled message did not come through")
	}
	select {
	case m := <-out:
		t.Fatalf("unexpected message %q", m.Data())
	case <-time.After(50 * time.Millisecond):
	}

	// Closed, it refuses, and what was handed back stays away.
	if in.Hand(inboxMsgs("fetch.1", "d")) != 1 {
		t.Fatal("refused with room")
	}
	d := receive(t, out)
	_ = d.NakWithDelay(20 * time.Millisecond)
	in.Close()
	if in.Hand(inboxMsgs("fetch.1", "e")) != 0 {
		t.Fatal("a closed inbox took a message")
	}
	select {
	case m := <-out:
		t.Fatalf("closed inbox redelivered %q", m.Data())
	case <-time.After(100 * time.Millisecond):
	}
	close(pulled)
	if _, ok := <-out; ok {
		t.Fatal("merged channel still open after the stream's closed")
	}

	var nilInbox *bus.Inbox
	if nilInbox.Hand(inboxMsgs("fetch.1", "x")) != 0 || nilInbox.HeldOn("fetch.1") != nil {
		t.Fatal("a nil inbox took or holds something")
	}
	nilInbox.Close()
}
