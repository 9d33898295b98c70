package dedup

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/splitter"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// One batch of a partition, in the order of effects the package comment
// gives: decode, classify through the layers (and ask the seen set), publish
// the new URLs, record them, ack.

// input is one discovered message: its valid links of this partition and
// their fingerprints.
type input struct {
	msg   jetstream.Msg
	seq   uint64
	links []messages.Link
	fps   []uint64
}

// handle de-duplicates one batch of partition p's discovered messages.
func (s *Service) handle(ctx context.Context, p int, batch []jetstream.Msg) error {
	log := s.o.Log.With("partition", p)
	var ins []input
	var rerouted []messages.Link
	for _, m := range batch {
		in, misrouted, err := s.decode(p, m)
		if err != nil {
			s.dlq.ParkOrLog(ctx, m, err.Error(), log)
			continue
		}
		rerouted = append(rerouted, misrouted...)
		ins = append(ins, in)
	}
	if len(rerouted) > 0 {
		// Someone published to the wrong partition: send each URL where it
		// belongs rather than dropping it.
		md, _ := batch[0].Metadata()
		idBase := fmt.Sprintf("reroute:%d:%d", p, md.Sequence.Stream)
		if err := bus.Retry(ctx, "reroute", log.Warn, nil, func() error { return s.reroute(ctx, idBase, rerouted) }); err != nil {
			return err
		}
	}
	if len(ins) == 0 {
		return nil
	}
	hold := func() {
		for _, in := range ins {
			_ = in.msg.InProgress()
		}
	}

	var all []uint64
	for _, in := range ins {
		all = append(all, in.fps...)
	}
	if s.o.Observer != nil {
		s.o.Observer.Fingerprints(p, all)
	}
	s.mu.Lock()
	l := s.layers[p]
	s.mu.Unlock()
	decided := l.classify(all, &s.Stats)
	var ask []uint64
	for fp, v := range decided {
		if v == verdictMaybe {
			ask = append(ask, fp)
		}
	}
	if len(ask) > 0 {
		var seen []bool
		start := time.Now()
		if err := bus.Retry(ctx, "seen-set lookup", log.Warn, hold, func() (err error) {
			seen, err = s.o.Seen.Seen(ctx, p, ask)
			return err
		}); err != nil {
			return err
		}
		if s.seenLatency != nil {
			s.seenLatency.Observe(time.Since(start).Seconds())
		}
		s.Stats.SeenLookups.Add(int64(len(ask)))
		for i, fp := range ask {
			if seen[i] {
				decided[fp] = verdictSeen
				s.Stats.SeenHits.Add(1)
			} else {
				decided[fp] = verdictNew
			}
		}
	}
	if s.batchSize != nil {
		s.batchSize.Observe(float64(len(all)))
	}
	// known: fingerprints that are duplicates from here on, whether seen
	// before or forwarded earlier in this batch.
	known := make(map[uint64]bool, len(decided))
	for fp, v := range decided {
		if v == verdictSeen {
			known[fp] = true
		}
	}

	var out []*nats.Msg
	var ids []string
	var fresh []uint64
	for _, in := range ins {
		var links []messages.Link
		for i, fp := range in.fps {
			if known[fp] {
				s.Stats.Duplicate.Add(1)
				continue
			}
			known[fp] = true
			fresh = append(fresh, fp)
			links = append(links, in.links[i])
		}
		if len(links) == 0 {
			continue
		}
		data, _ := messages.Encode(&messages.NewURLs{Partition: p, Links: links})
		m := nats.NewMsg(s.o.Names.FrontierNew(p))
		m.Data = data
		m.Header.Set(messages.HeaderKind, messages.KindNew)
		out = append(out, m)
		ids = append(ids, fmt.Sprintf("new:%d:%d", p, in.seq))
		s.Stats.New.Add(int64(len(links)))
	}
	if err := bus.Retry(ctx, "publish new URLs", log.Warn, hold, func() error { return bus.PublishAll(ctx, s.o.JS, out, ids) }); err != nil {
		return err
	}
	if len(fresh) > 0 {
		if err := bus.Retry(ctx, "seen-set record", log.Warn, hold, func() error { return s.o.Seen.Record(ctx, p, fresh) }); err != nil {
			return err
		}
	}
	l.learn(decided, fresh)
	for _, in := range ins {
		_ = in.msg.Ack()
	}
	return nil
}

// decode validates one discovered message; links of another partition are
// returned separately.
func (s *Service) decode(p int, m jetstream.Msg) (in input, misrouted []messages.Link, err error) {
	if s.dlq.CrashLooping(m) {
		return in, nil, fmt.Errorf("delivered more than %d times without being acked", s.o.MaxDeliver)
	}
	var d messages.Discovered
	if err := messages.Decode(m.Data(), &d); err != nil {
		return in, nil, err
	}
	md, err := m.Metadata()
	if err != nil {
		return in, nil, err
	}
	in = input{msg: m, seq: md.Sequence.Stream}
	for _, l := range d.Links {
		s.Stats.In.Add(1)
		canon := l.URL
		if !urlx.IsCanonical(canon) { // parsers send canonical URLs; others may not
			var err error
			if canon, err = urlx.Canonicalize(l.URL); err != nil {
				s.Stats.Invalid.Add(1)
				continue
			}
		}
		l.URL = canon
		host, _ := urlx.Host(canon)
		if urlx.Partition(host, s.o.PartitionCount) != p {
			s.Stats.Misrouted.Add(1)
			misrouted = append(misrouted, l)
			continue
		}
		in.links = append(in.links, l)
		in.fps = append(in.fps, urlx.Fingerprint(canon))
	}
	return in, misrouted, nil
}

func (s *Service) reroute(ctx context.Context, idBase string, links []messages.Link) error {
	msgs, ids := splitter.Split(s.o.Names, s.o.PartitionCount, messages.ViaLink, "", idBase, links)
	return bus.PublishAll(ctx, s.o.JS, msgs, ids)
}
