package testbus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Settled waits until consumer (one that takes the whole stream) has been
// delivered and has acked everything on stream, then checks
// that nothing was redelivered and nothing went to the dead-letter stream.
func Settled(t testing.TB, js jetstream.JetStream, names subjects.Names, stream, consumer string) {
	t.Helper()
	ctx := context.Background()
	c, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var pending, ackPending, redelivered uint64
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		// Every message stored so far delivered, then none pending: a
		// message just published may not count as pending yet, and
		// "nothing pending" alone passed before it was even delivered.
		sinfo, err := st.Info(ctx)
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		pending, ackPending, redelivered = info.NumPending, uint64(info.NumAckPending), uint64(info.NumRedelivered)
		last := sinfo.State.LastSeq
		if f := info.Config.FilterSubject; f != "" {
			// Not a work stream's block keeper (bus.KeepBlock), which no
			// consumer is given: the last message the consumer is for.
			m, err := st.GetLastMsgForSubject(ctx, f)
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
				last = 0 // none left: each was delivered and acked
			case err != nil:
				return err
			default:
				last = m.Sequence
			}
		}
		if info.Delivered.Stream < last {
			return fmt.Errorf("%s: delivered up to %d of %d", consumer, info.Delivered.Stream, last)
		}
		if pending != 0 || ackPending != 0 {
			return fmt.Errorf("%s: %d pending, %d not acked", consumer, pending, ackPending)
		}
		return nil
	})
	if redelivered != 0 {
		t.Errorf("%s: %d messages redelivered", consumer, redelivered)
	}
	s, err := js.Stream(ctx, names.StreamDLQ())
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Info(ctx); info.State.Msgs != 0 {
		t.Errorf("%d dead letters", info.State.Msgs)
	}
}
