package bus

// The block keeper. A work-queue stream on file storage holds, at a crawl of
// few hosts, one or two messages at a time, and each ack empties it. The NATS
// file store deletes a message block as soon as its last message goes, and
// when that block is the one it writes to it opens a new file, writes a
// tombstone and unlinks the old one: several file creations and deletions a
// page, a fifth of the CPU of a one-host crawl (docs/benchmarks.md, "Where
// one host's CPU goes"). A message no consumer is ever given, on a subject
// of the stream's own that no consumer's filter covers, keeps the block from
// emptying. The store moves to a new block every few megabytes, so the
// keeper is published again every KeepEvery and the older ones purged: at
// most one is kept, and for at most KeepEvery after a new block is started
// the churn comes back. The consumer of a work stream keeps it. What the stream holds for its consumers is its
// message count less its keepers (WorkMsgs).

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KeepEvery is how often a keeper is published again.
const KeepEvery = 250 * time.Millisecond

// KeepBlock keeps the last block of the work stream called stream from
// emptying (see above) until ctx ends or stop is called; keeper is the
// stream's keeper subject. A stream nothing was published to since its
// keeper is left alone (its last message is a keeper, of this process or of
// another replica): the keeper is in its last block still, and the stream's
// last sequence stays put, which is how `run` sees that the crawl is over.
// Failures cost speed only: the first is logged as a warning that says what
// to allow, later ones at debug level, and the next round tries again.
func KeepBlock(ctx context.Context, js jetstream.JetStream, stream, keeper string, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		k := blockKeeper{js: js, stream: stream, subject: keeper}
		t := time.NewTicker(KeepEvery)
		defer t.Stop()
		warned := false
		for {
			if err := k.round(ctx); err != nil && ctx.Err() == nil && log != nil {
				if !warned {
					// Once: the crawl goes on without it, only slower
					// at few hosts; NATS permissions are the likely cause.
					log.Warn("block keeper failed; the crawl goes on, slower at few hosts: let this service publish to the subject and purge the stream",
						"stream", stream, "subject", keeper, "err", err)
					warned = true
				} else {
					log.Debug("block keeper", "stream", stream, "err", err)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

type blockKeeper struct {
	js              jetstream.JetStream
	stream, subject string
	st              jetstream.Stream
}

// round publishes a keeper and purges the ones before it, unless the
// stream's last message is a keeper (this process's or another replica's).
func (k *blockKeeper) round(ctx context.Context) error {
	if k.st == nil {
		st, err := k.js.Stream(ctx, k.stream)
		if err != nil {
			return err
		}
		k.st = st
	}
	info, err := k.st.Info(ctx)
	if err != nil {
		return err
	}
	if last, err := k.st.GetLastMsgForSubject(ctx, k.subject); err == nil && last.Sequence == info.State.LastSeq {
		return nil
	} else if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return err
	}
	if _, err := k.js.Publish(ctx, k.subject, nil); err != nil {
		return err
	}
	return k.st.Purge(ctx, jetstream.WithPurgeSubject(k.subject), jetstream.WithPurgeKeep(1))
}

// WorkMsgs returns the info of a work stream and how many messages it holds
// for its consumers: all of them less its keepers (keeper: the stream's
// keeper subject).
//
// It asks for the subjects under the keeper's parent (`<prefix>.keep.*`),
// not for the keeper's own subject: NATS 2.9's file store answers a literal
// filter from a per-subject index whose first block goes stale once the
// keepers in it are purged and the block removed, and then reports no
// subject at all (nats-server v2.9.10, filestore.go SubjectsState); the
// keeper was counted as work and a crawl of the services on that server
// never ended. A wildcard scans the blocks. A work stream holds no other
// subject under that parent.
func WorkMsgs(ctx context.Context, st jetstream.Stream, keeper string) (*jetstream.StreamInfo, uint64, error) {
	filter := keeper
	if i := strings.LastIndexByte(keeper, '.'); i >= 0 {
		filter = keeper[:i+1] + "*"
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, 0, err
	}
	msgs := info.State.Msgs
	return info, msgs - min(msgs, info.State.Subjects[keeper]), nil
}
