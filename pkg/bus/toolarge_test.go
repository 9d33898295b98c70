package bus

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TooLarge knows the ways a server refuses a message for its size, through
// PublishAll as the services publish: over max_payload (refused by the
// client), headers over 64 KiB and over the stream's max message size
// (refused by the server in the publish ack).
func TestTooLarge(t *testing.T) {
	ns, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	nc, err := ConnectEmbedded(ns, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"small"}, MaxMsgSize: 1024}); err != nil {
		t.Fatal(err)
	}
	msg := func(subject string, header, data int) *nats.Msg {
		m := nats.NewMsg(subject)
		m.Data = make([]byte, data)
		if header > 0 {
			m.Header.Set("X-Big", strings.Repeat("h", header))
		}
		return m
	}
	for name, tc := range map[string]struct {
		m    *nats.Msg
		want bool
	}{
		"fits":              {msg("s", 1000, 1000), false},
		"over max_payload":  {msg("s", 0, EmbeddedMaxPayload+1), true},
		"headers over 64k":  {msg("s", 70<<10, 10), true},
		"over max_msg_size": {msg("small", 0, 2048), true},
	} {
		err := PublishAll(ctx, js, []*nats.Msg{tc.m}, []string{name})
		if TooLarge(err) != tc.want || (err == nil) == tc.want {
			t.Errorf("%s: err %v, TooLarge %v", name, err, TooLarge(err))
		}
	}
	if TooLarge(errors.New("nats: timeout")) || TooLarge(nil) {
		t.Error("other errors are not TooLarge")
	}
}
