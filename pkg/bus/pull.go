package bus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Pull delivers a consumer's messages on a channel until ctx ends; the channel
// is closed then. buffer bounds how many messages are pulled ahead. Messages
// pulled but not yet handed over when ctx ends are left alone: JetStream
// delivers them again after their ack wait. (Nak'ing them looked faster, but
// the server hands a nak'ed message straight back to the still-open pull
// requests of the stopping subscription: a loop that inflates delivery
// counts until messages look poisonous.)
func Pull(ctx context.Context, c jetstream.Consumer, buffer int) (<-chan jetstream.Msg, error) {
	return pull(ctx, c, buffer, 0)
}

// PullBatches is Pull for consumers that take messages in batches (Batch,
// Drain): the channel holds up to buffer messages, so that Drain sees every
// message already pulled. With Pull's unbuffered channel, fed by one
// goroutine, a batch is almost always one or two messages, and every batch
// costs its consumer a store round trip. Do not use it for one-at-a-time
// workers: a message waiting in the channel is not yet being worked on, and
// one that waits longer than its ack wait is redelivered while still queued.
func PullBatches(ctx context.Context, c jetstream.Consumer, buffer int) (<-chan jetstream.Msg, error) {
	return pull(ctx, c, buffer, buffer)
}

// pullExpiry is how long a pull request waits on the server, and
// pullHeartbeat how often the server says a waiting request still stands.
// Two missed heartbeats tell the client that its requests are gone and it
// asks again; Pull then also checks that the consumer exists: a Durable
// lost with its server is back within about two heartbeats.
//
// The heartbeat is short because a request can go without a word: NATS 2.9
// drops one that expired as a message came in and tells no one
// (nats-server v2.9.10 consumer.go, nextWaiting: no 408 when the request's
// interest is its reply subject). The client counts it as standing and asks
// for nothing more, and the consumer's messages wait for the heartbeat
// monitor: at the former heartbeat of half the expiry, a host partition of
// the services stood still for 10 s a few seconds into every crawl
// (TestPullRequestsAskForAShortHeartbeat). A heartbeat is a
// header-only message a second per idle request. Variables for tests.
var (
	pullExpiry    = 30 * time.Second
	pullHeartbeat = time.Second
)

// pullMaxBytes bounds the bytes a pull request asks for, so that what the
// server sends while the handler is busy stays under the client's pending
// limit for a subscription (64 MB). It is raised to twice the server's
// max_payload where that is larger: a message over a request's bytes is
// never delivered.
const pullMaxBytes = 16 << 20

// pull runs the consumer's messages through a callback (Consume) that hands
// them to the channel, blocking while the reader is busy. Not the client's
// iterator (Messages): it keeps the messages asked for and the server's idle
// heartbeats in one channel as long as the messages asked for, so a reader
// away for a few heartbeats (a fetcher held back by the parser's backlog, a
// busy parser) had heartbeats fill it and the next message dropped ("slow
// consumer"), back only after its ack wait: the services stood still 30 s
// (TestPullLosesNothingWhileItsReaderIsAway). A callback's subscription
// queues heartbeats behind the message being handed over, and the client
// stops watching for them while a callback runs.
func pull(ctx context.Context, c jetstream.Consumer, buffer, queue int) (<-chan jetstream.Msg, error) {
	d, _ := c.(*Durable)
	maxBytes := pullMaxBytes
	if d != nil {
		maxBytes = max(maxBytes, 2*int(d.js.Conn().MaxPayload()))
	}
	out := make(chan jetstream.Msg, queue)
	var (
		mu     sync.RWMutex
		closed bool // out is closed: a late callback must not send on it
	)
	handle := func(m jetstream.Msg) {
		mu.RLock()
		defer mu.RUnlock()
		if closed || ctx.Err() != nil {
			return // left alone: JetStream delivers it again after its ack wait
		}
		select {
		case out <- m:
		case <-ctx.Done():
		}
	}
	errs := make(chan error, 1)
	opts := []jetstream.PullConsumeOpt{
		jetstream.PullMaxMessagesWithBytesLimit(buffer, maxBytes),
		jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			select {
			case errs <- err:
			default: // one pending is enough: it only asks for a check
			}
		}),
	}
	if pullHeartbeat > 0 {
		opts = append(opts, jetstream.PullHeartbeat(pullHeartbeat))
	}
	cc, err := c.Consume(handle, opts...)
	if err != nil {
		return nil, err
	}
	reopens := 0 // failed reopens in a row
	go func() {
		defer func() {
			mu.Lock()
			closed = true
			close(out)
			mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				// Drain: the unsubscribe seen by the server before the
				// channel closes (PullOwned); what was pulled is dropped
				// by handle and comes back after its ack wait.
				cc.Drain()
				select {
				case <-cc.Closed():
				case <-time.After(stopWait):
					cc.Stop()
				}
				return
			case <-errs:
				// Missed heartbeats and reconnects are ridden out by the
				// client; a consumer the server lost is created again.
				if d != nil {
					if _, rerr := d.restore(ctx); rerr != nil && ctx.Err() == nil {
						d.log.Warn("nothing is pulled until the consumer exists; trying again at the next missed heartbeat", "err", rerr)
					}
				}
			case <-cc.Closed():
				// Stopped by the client: the consumer deleted, a bad
				// request, the connection closed.
				if ctx.Err() != nil || d == nil {
					return
				}
				if _, rerr := d.restore(ctx); rerr != nil && ctx.Err() == nil && reopens == 0 {
					d.log.Warn("nothing is pulled until the consumer exists; trying again", "err", rerr)
				}
				next, oerr := c.Consume(handle, opts...)
				if oerr == nil {
					cc, reopens = next, 0
					continue
				}
				if reopens++; reopens == 1 {
					d.log.Warn("cannot pull from the consumer again (NATS unreachable?); trying again with a growing wait up to 10 s",
						"consumer", d.cfg.Durable, "err", oerr)
				}
				select {
				case <-ctx.Done():
				case <-time.After(Backoff(reopens)): // do not spin on a dead link
				}
			}
		}
	}()
	return out, nil
}

// PullOwned is PullBatches for a loop that may end before ctx does (an
// owned partition, run again after an error or handed to another replica
// in the same process). stop ends the pull and waits until its channel is
// closed: the subscription drained, its unsubscribe seen by the server, so
// that a message published from then on goes to the next pull on the
// consumer and not to this one's inbox, where it would sit out its ack
// wait. It waits at most stopWait (a server gone away), and says so on log
// (nil: silent) when that runs out.
func PullOwned(ctx context.Context, c jetstream.Consumer, buffer int, log *slog.Logger) (msgs <-chan jetstream.Msg, stop func(), err error) {
	pulling, cancel := context.WithCancel(ctx)
	out, err := PullBatches(pulling, c, buffer)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return out, func() {
		cancel()
		timeout := time.NewTimer(stopWait)
		defer timeout.Stop()
		for {
			select {
			case _, ok := <-out: // dropped, as Pull drops it after ctx ends
				if !ok {
					return
				}
			case <-timeout.C:
				if log != nil {
					log.Warn("the stopped pull did not close within its wait (NATS unreachable?); messages it still held come back after their ack wait",
						"consumer", c.CachedInfo().Name, "waited", stopWait)
				}
				return
			}
		}
	}, nil
}

// stopWait bounds PullOwned's stop: a round trip to the server.
const stopWait = 5 * time.Second

// Batch waits for one message and then takes whatever else is ready, up to max.
// It returns nil when ctx ends or the channel closes.
func Batch(ctx context.Context, in <-chan jetstream.Msg, max int) []jetstream.Msg {
	var batch []jetstream.Msg
	select {
	case m, ok := <-in:
		if !ok {
			return nil
		}
		batch = append(batch, m)
	case <-ctx.Done():
		return nil
	}
	return Drain(in, batch, max)
}

// Drain appends messages that are ready right now, up to max in all.
func Drain(in <-chan jetstream.Msg, batch []jetstream.Msg, max int) []jetstream.Msg {
	for len(batch) < max {
		select {
		case m, ok := <-in:
			if !ok {
				return batch
			}
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}

// Backoff is the wait before retry n (1-based) of a failed step: 100ms
// doubling to 10s, so an outage of Redis or NATS is ridden out without spinning.
func Backoff(n int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < n && d < 10*time.Second; i++ {
		d *= 2
	}
	return min(d, 10*time.Second)
}

// Retry runs step until it succeeds or ctx ends, backing off between tries and
// calling hold (if not nil) so held messages are not redelivered meanwhile.
func Retry(ctx context.Context, what string, log func(string, ...any), hold func(), step func() error) error {
	for n := 1; ; n++ {
		err := step()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log("retrying after error", "step", what, "attempt", n, "err", err)
		if hold != nil {
			hold()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(Backoff(n)):
		}
	}
}
