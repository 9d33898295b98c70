package fetcher

// The handover: in `trawler run` with no other process on its NATS, and in
// `trawler fetcher --with-parser` while pages.fetched has no other reader,
// the fetcher gives each page to the parser in process instead of publishing
// it on pages.fetched, where it would be written to the stream's file only to
// be deleted a moment later (a page's size in disk writes, and the largest
// message the embedded server stores). The fetch task carries the page's
// durability instead: it is acked, and the frontier told the fetch is done,
// only once the parser has published what it found. A crash before that
// redelivers the task and fetches the page again, as a crash before the
// page's publish always did.

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// HandPagesTo makes the fetcher give its pages to parse, in the fetching
// worker, instead of publishing them, whenever alone reports that nothing
// else reads pages.fetched (nil: always). parse must settle the message it
// is given (Ack, Nak or Term) before it returns. Call it before Run. Taps
// and the archive see the pages published while alone is false only.
func (s *Service) HandPagesTo(parse func(context.Context, jetstream.Msg), alone func() bool) {
	s.handoff, s.handAlone = parse, alone
}

// handOver gives the page among a task's results (out[0], when it is one)
// to the parser and returns what is left to publish. ok is false when the
// parser handed the page back (NATS trouble): the task has then been handed
// back too, to come again after the parser's delay, and the caller keeps
// out for that redelivery (unsent), which hands the same page over again
// instead of fetching it twice.
func (s *Service) handOver(ctx context.Context, m jetstream.Msg, out []*nats.Msg, ids []string) (rest []*nats.Msg, restIDs []string, ok bool) {
	if s.handoff == nil || len(out) == 0 || out[0].Subject != s.o.Names.PagesFetched() || s.handAlone != nil && !s.handAlone() {
		return out, ids, true
	}
	lm := bus.NewLocalMsg(out[0], m)
	s.handoff(ctx, lm)
	switch outcome, delay := lm.Outcome(); outcome {
	case bus.Acked, bus.Terminated: // parsed, or dead-lettered: done with it
		return out[1:], ids[1:], true
	default:
		_ = m.NakWithDelay(max(delay, time.Second))
		return nil, nil, false
	}
}
