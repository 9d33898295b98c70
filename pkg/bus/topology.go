package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Topology describes the streams and durable consumers of one crawl. Every
// subcommand ensures it at start, so the order in which services come up does
// not matter and no message is published before its consumer exists.
type Topology struct {
	Names       subjects.Names
	Partitions  int           // P
	DedupWindow time.Duration // duplicate window of the work streams
	FetchAck    time.Duration // how long a fetcher may hold a task before redelivery
	// The public parsed stream keeps documents for taps that attach later,
	// up to ParsedMaxAge and ParsedMaxBytes, oldest dropped first (zero:
	// 7 days and 1 GiB).
	ParsedMaxAge   time.Duration
	ParsedMaxBytes int64
	// ParsedInterest keeps a parsed document only until every durable
	// consumer of the stream (the --out writer, the archive's, durable taps)
	// acked it, the limits above still applying as a ceiling; with none, a
	// document is not stored at all. The all-in-one mode's default: there
	// the documents carry the page's text for --out, and a stream that keeps
	// a gigabyte of them wrote them all to disk, and, once at its byte
	// limit, decompressed and rewrote a block for every document dropped
	// from its head (2 GiB of RSS at 100,000 pages, docs/benchmarks.md).
	ParsedInterest bool
	// Buckets are key-value buckets made (or updated, as KeyValue does)
	// beside the streams, for a process whose services would otherwise make
	// them one after the other on the way to a crawl's first request.
	Buckets []jetstream.KeyValueConfig
}

// Work streams use work-queue retention: a message stays until its one
// consumer acks it, even if that consumer is not running yet.
// DiscoveredDedupWindow is the duplicate window of the discovered stream,
// whatever Topology.DedupWindow says (when that is longer).
const DiscoveredDedupWindow = 5 * time.Second

func (t Topology) streams() []jetstream.StreamConfig {
	n := t.Names
	parsedAge, parsedBytes := t.ParsedMaxAge, t.ParsedMaxBytes
	if parsedAge <= 0 {
		parsedAge = 7 * 24 * time.Hour
	}
	if parsedBytes <= 0 {
		parsedBytes = 1 << 30
	}
	work := func(name, subject, desc string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			// The keeper's subject (keeper.go) is the stream's own.
			Name: name, Subjects: []string{subject, n.Keeper(name)}, Description: desc,
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
			Duplicates: t.DedupWindow,
		}
	}
	parsed := jetstream.StreamConfig{
		// Limits retention: a tap may attach later and replay what is
		// kept. Compressed (S2) at rest, since it is kept: parsed
		// documents are text and URLs, a third or less of their size.
		Name: n.StreamParsed(), Subjects: []string{n.PagesParsed()},
		Description: "parsed pages: JSON documents with outlinks",
		Retention:   jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		MaxAge: parsedAge, MaxBytes: parsedBytes, Discard: jetstream.DiscardOld,
		Duplicates: t.DedupWindow, Compression: jetstream.S2Compression,
	}
	if t.ParsedInterest {
		// Kept for seconds: not compressed, as a compressed block is
		// written twice (raw, then compressed once full) and decompressed
		// to remove a message.
		parsed.Retention, parsed.Compression = jetstream.InterestPolicy, jetstream.NoCompression
	}
	// Discovered links need no long duplicate window: a batch published
	// twice (a retry after a lost ack) costs dedup a second look, and its
	// seen set drops the repeats. The server keeps every message ID for
	// the window, and link batches are most of a crawl's messages (up to
	// one per partition and page), so their window is short.
	discovered := work(n.StreamDiscovered(), n.Prefix+".discovered.*", "discovered URLs by host partition, before dedup")
	if t.DedupWindow <= 0 || t.DedupWindow > DiscoveredDedupWindow {
		discovered.Duplicates = DiscoveredDedupWindow
	}
	return []jetstream.StreamConfig{
		discovered,
		work(n.StreamFrontier(), n.Prefix+".frontier.*.*", "new URLs and finished fetches, by host partition"),
		work(n.StreamFetch(), n.Prefix+".fetch.*", "fetch tasks, by host partition"),
		{
			// Interest retention: kept until the parser and every tap's durable
			// consumer acked it, so an archive tap never misses a page.
			Name: n.StreamPages(), Subjects: []string{n.PagesFetched()},
			Description: "fetched pages: raw body, JSON metadata in the Trawler-Page header",
			Retention:   jetstream.InterestPolicy, Storage: jetstream.FileStorage,
			Duplicates: t.DedupWindow,
		},
		parsed,
		{
			Name: n.StreamDLQ(), Subjects: []string{n.Prefix + ".dlq.*"},
			Description: "dead letters: messages a service could not process, with the reason",
			Retention:   jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxAge: 30 * 24 * time.Hour,
		},
	}
}

func (t Topology) consumers() map[string][]jetstream.ConsumerConfig {
	n := t.Names
	durable := func(name, filter string, ackWait time.Duration, pending int) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{
			Durable: name, FilterSubject: filter,
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait,
			MaxDeliver: -1, MaxAckPending: pending,
		}
	}
	// The work queues' consumers keep their state (what is delivered,
	// what acked) in the server's memory: a durable consumer's state file
	// is rewritten up to ten times a second, and with two consumers per
	// partition that was a sixth of the NATS server's CPU in the services
	// mode (docs/benchmarks.md). Nothing is lost with it: a work-queue
	// stream drops a message only when it is acked, so a consumer that a
	// restarted server forgot is created again (Pull) and delivers again
	// what was not acked, as the ack wait would have; the frontier's
	// intake log and dedup's seen set take the repeats. In a cluster the
	// consumer's replicas keep it. The pages stream's consumer stays on
	// file: that stream keeps a page only while a consumer wants it.
	work := func(c jetstream.ConsumerConfig) jetstream.ConsumerConfig {
		c.MemoryStorage = true
		return c
	}
	var dedup, frontier []jetstream.ConsumerConfig
	for p := 0; p < t.Partitions; p++ {
		// Batches take milliseconds and retries extend the lease, so a short
		// ack wait only matters after a crash: it is how long a restarted
		// replica waits for what its predecessor had pulled.
		dedup = append(dedup, work(durable(n.ConsumerDedup(p), n.Discovered(p), 15*time.Second, 4096)))
		frontier = append(frontier, work(durable(n.ConsumerFrontier(p), n.Frontier(p), 15*time.Second, 4096)))
	}
	return map[string][]jetstream.ConsumerConfig{
		n.StreamDiscovered(): dedup,
		n.StreamFrontier():   frontier,
		n.StreamFetch():      {work(durable(n.ConsumerFetcher(), n.Prefix+".fetch.*", t.FetchAck, 100000))},
		n.StreamPages():      {durable(n.ConsumerParser(), n.PagesFetched(), 30*time.Second, 10000)},
	}
}

// Ensure creates or updates every stream and durable consumer; it is
// idempotent and safe to run from many processes at once. What exists with
// the wanted settings is left alone: on a cluster, updates racing another
// process's create may go unanswered (see KeyValue).
func (t Topology) Ensure(ctx context.Context, js jetstream.JetStream) error {
	// The streams at once, then their consumers at once: one after the other
	// they were a third of trawler run's start before its first request.
	var ensure []func() error
	version := ""
	if nc := js.Conn(); nc != nil {
		version = nc.ConnectedServerVersion()
	}
	for _, b := range t.Buckets {
		ensure = append(ensure, func() error {
			if _, err := KeyValue(ctx, js, b); err != nil {
				return fmt.Errorf("ensure bucket %s: %w", b.Bucket, err)
			}
			return nil
		})
	}
	for _, sc := range t.streams() {
		sc.Replicas = Replicas(js)
		sc.Compression = streamCompression(version, sc.Compression)
		ensure = append(ensure, func() error {
			if err := retry(ctx, func(ctx context.Context) error { return ensureStream(ctx, js, sc) }); err != nil {
				return fmt.Errorf("ensure stream %s: %w", sc.Name, err)
			}
			return nil
		})
	}
	if err := all(ensure); err != nil {
		return err
	}
	ensure = ensure[:0]
	for stream, ccs := range t.consumers() {
		for _, cc := range ccs {
			ensure = append(ensure, func() error {
				if err := retry(ctx, func(ctx context.Context) error { return ensureConsumer(ctx, js, stream, cc) }); err != nil {
					return fmt.Errorf("ensure consumer %s on %s: %w", cc.Durable, stream, err)
				}
				return nil
			})
		}
	}
	return all(ensure)
}

// all runs fns at once and joins their errors.
func all(fns []func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) error {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, want)
		return err
	}
	if err != nil {
		return err
	}
	if sameStream(s.CachedInfo().Config, want) {
		return nil
	}
	_, err = js.UpdateStream(ctx, want)
	return err
}

// sameStream tells whether a stream as the server reports it has the
// settings the topology asks for (the server fills in defaults for zeros).
func sameStream(have, want jetstream.StreamConfig) bool {
	wantBytes := want.MaxBytes
	if wantBytes == 0 {
		wantBytes = -1
	}
	return slices.Equal(have.Subjects, want.Subjects) && have.Replicas == max(want.Replicas, 1) &&
		have.Retention == want.Retention && have.Storage == want.Storage &&
		(want.Duplicates == 0 || have.Duplicates == want.Duplicates) &&
		have.MaxAge == want.MaxAge && have.MaxBytes == wantBytes && have.Discard == want.Discard &&
		have.Description == want.Description && have.Compression == want.Compression
}

func ensureConsumer(ctx context.Context, js jetstream.JetStream, stream string, want jetstream.ConsumerConfig) error {
	c, err := js.Consumer(ctx, stream, want.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		_, err = js.CreateOrUpdateConsumer(ctx, stream, want)
		return err
	}
	if err != nil {
		return err
	}
	have := c.CachedInfo().Config
	if sameConsumer(have, want) {
		return nil
	}
	// Where the state is kept cannot change: a consumer made on file by
	// an earlier version stays there.
	want.MemoryStorage = have.MemoryStorage
	_, err = js.UpdateConsumer(ctx, stream, want)
	return err
}

func sameConsumer(have, want jetstream.ConsumerConfig) bool {
	return have.FilterSubject == want.FilterSubject && have.AckPolicy == want.AckPolicy &&
		have.AckWait == want.AckWait && have.MaxDeliver == want.MaxDeliver && have.MaxAckPending == want.MaxAckPending
}
