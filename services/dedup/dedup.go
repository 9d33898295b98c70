// Package dedup is the duplicate URL eliminator: it reads discovered URLs of
// the partitions it owns, drops those seen before and forwards new ones to the
// frontier of the same partition.
//
// Order of effects per batch, chosen so that a crash loses nothing:
//  1. decide new vs seen against the seen set (read only);
//  2. publish the new URLs, one message per input message, with a Nats-Msg-Id
//     derived from the input's stream sequence;
//  3. record them in the seen set;
//  4. ack the input.
//
// A crash before 3 replays the batch: the same URLs are still new and the same
// message IDs are published again, which JetStream drops within its duplicate
// window. A crash between 3 and 4 replays a batch whose URLs are now seen.
package dedup

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/cache"
	"github.com/trawlerhq/trawler/pkg/ownership"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Observer sees the fingerprints dedup receives, for a study of the crawl
// beside it (the cache study's recorder, internal/cachestudy/record). It is
// called from every owned partition's goroutine, so it must be safe for
// concurrent use; it must not keep fps past the call, and it should return
// quickly: the batch waits for it.
type Observer interface {
	// Fingerprints is called once per batch with the fingerprints partition
	// received, in arrival order: repeats included, invalid URLs left out,
	// a misrouted URL where it is re-routed to.
	Fingerprints(partition int, fps []uint64)
}

// maxBatch bounds the discovered messages handled in one seen-set round trip.
const maxBatch = 256

// Options wire a dedup service.
type Options struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	Seen       store.SeenSet
	Partitions []int // owned partitions (static)
	// Join, when set, takes partitions from the ownership table instead of
	// the static Partitions; a partition taken over warms its Bloom filter
	// before trusting "absent".
	Join           ownership.Joiner
	PartitionCount int
	MaxDeliver     int

	// The layers in front of the seen set.
	CachePolicy  string // clock (default), lru, random or static
	CacheSize    int    // entries per replica, split over its partitions
	StaticFile   string // fingerprints for the static policy (cache.LoadStatic)
	ExpectedURLs int    // crawl-wide, to size the Bloom filters
	BloomFP      float64

	// Observer, when set, sees every fingerprint received (nil: none).
	Observer Observer
	// AfterBatch, when set, is called after each batch is handled: `trawler
	// run`'s end watcher then asks the store whether anything is left
	// (crawlstate.Watcher.Wake). It must not block.
	AfterBatch func()

	Log        *slog.Logger
	Registerer prometheus.Registerer // may be nil
}

// Stats are the service's running totals.
type Stats struct {
	In, New, Duplicate, Misrouted, Invalid atomic.Int64
	// Per layer: cache hits; Bloom "absent" (new, no I/O), "maybe" and
	// "cold" (filter still warming up); seen-set lookups and hits.
	CacheHits, BloomAbsent, BloomMaybe, BloomCold, SeenLookups, SeenHits atomic.Int64
}

// Service is one dedup replica.
type Service struct {
	o      Options
	dlq    bus.DeadLetters
	Stats  Stats
	static cache.Cache // the shared static cache, for the static policy
	mu     sync.Mutex
	layers map[int]*layers // by owned partition; guarded by mu
	blooms bloomArena

	seenLatency, batchSize prometheus.Observer
}

// New wires a dedup replica; Run starts it.
func New(o Options) *Service {
	s := &Service{o: o, dlq: bus.DeadLetters{JS: o.JS, Names: o.Names, Service: "dedup", MaxDeliver: o.MaxDeliver},
		layers: map[int]*layers{}}
	if o.Registerer != nil {
		bus.RegisterCounters(o.Registerer, "dedup",
			bus.Counter{Name: "urls_in_total", Help: "URLs received.", Value: &s.Stats.In},
			bus.Counter{Name: "urls_new_total", Help: "URLs forwarded to the frontier as new.", Value: &s.Stats.New},
			bus.Counter{Name: "urls_duplicate_total", Help: "URLs dropped as seen before.", Value: &s.Stats.Duplicate},
			bus.Counter{Name: "urls_invalid_total", Help: "URLs dropped as not canonical-izable.", Value: &s.Stats.Invalid},
			bus.Counter{Name: "cache_hits_total", Help: "Fingerprints found in the in-process cache (duplicates, no I/O).", Value: &s.Stats.CacheHits},
			bus.Counter{Name: "bloom_absent_total", Help: "Cache misses the Bloom filter proved new (no I/O).", Value: &s.Stats.BloomAbsent},
			bus.Counter{Name: "bloom_maybe_total", Help: "Cache misses the Bloom filter could not rule out.", Value: &s.Stats.BloomMaybe},
			bus.Counter{Name: "bloom_cold_total", Help: "Cache misses while the Bloom filter was warming up.", Value: &s.Stats.BloomCold},
			bus.Counter{Name: "seen_lookups_total", Help: "Fingerprints asked of the seen set.", Value: &s.Stats.SeenLookups},
			bus.Counter{Name: "seen_hits_total", Help: "Fingerprints the seen set had recorded.", Value: &s.Stats.SeenHits},
		)
		o.Registerer.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "trawler", Subsystem: "dedup", Name: "bloom_fill_ratio",
				Help: "Share of set bits, averaged over owned partitions (counted at most every 10 s)."}, func() float64 { r, _ := s.bloomFill(); return r }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "trawler", Subsystem: "dedup", Name: "bloom_false_positive_rate",
				Help: "Estimated false-positive rate at the current fill, averaged over owned partitions."}, func() float64 { _, f := s.bloomFill(); return f }),
		)
		lat := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "trawler", Subsystem: "dedup", Name: "seen_lookup_seconds",
			Help: "Latency of one batched seen-set lookup.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)})
		bs := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "trawler", Subsystem: "dedup", Name: "batch_urls",
			Help: "URLs per processed batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 16)})
		o.Registerer.MustRegister(lat, bs)
		s.seenLatency, s.batchSize = lat, bs
	}
	return s
}

// Run consumes every owned partition until ctx ends, then finishes the batch
// in hand and returns.
func (s *Service) Run(ctx context.Context) error {
	if s.o.BloomFP <= 0 || s.o.BloomFP >= 1 {
		s.o.BloomFP = 0.01
	}
	if err := s.loadStatic(); err != nil {
		return err
	}
	if _, err := cache.New(cmpOr(s.o.CachePolicy, "clock"), 16); err != nil && s.static == nil {
		return err // an unknown policy fails at start, not per partition
	}
	defer bus.KeepBlock(ctx, s.o.JS, s.o.Names.StreamDiscovered(), s.o.Names.Keeper(s.o.Names.StreamDiscovered()), s.o.Log)()
	return ownership.Serve(ctx, s.o.Partitions, s.o.Join, s.runPartition, func(p int, err error, retryIn time.Duration) {
		s.o.Log.Warn("partition failed; restarting it", "partition", p, "err", err, "retry_in", retryIn)
	})
}

// runPartition de-duplicates partition p until ctx ends, then finishes the
// batch in hand. Its Bloom filter warms from the seen set meanwhile.
func (s *Service) runPartition(ctx context.Context, p int) error {
	l, err := s.newPartitionLayers(p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.layers[p] = l
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.layers, p)
		s.mu.Unlock()
	}()
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		scan := func(ctx context.Context, fn func([]uint64) error) error { return s.o.Seen.Scan(ctx, p, fn) }
		for n := 1; ; n++ {
			count, took, err := l.warm(ctx, scan)
			if err == nil {
				s.o.Log.Debug("Bloom filter warm", "partition", p, "fingerprints", count, "took", took)
				return
			}
			if ctx.Err() != nil {
				return
			}
			s.o.Log.Warn("Bloom filter warm-up failed; retrying (the seen set answers meanwhile)", "partition", p, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(bus.Backoff(n)):
			}
		}
	}()
	defer func() { <-warmed }()
	cons, err := bus.Consumer(ctx, s.o.JS, s.o.Names.StreamDiscovered(), s.o.Names.ConsumerDedup(p), s.o.Log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("dedup partition %d: %w", p, err)
	}
	msgs, stopPull, err := bus.PullOwned(ctx, cons, 2*maxBatch, s.o.Log.With("partition", p))
	if err != nil {
		return fmt.Errorf("dedup partition %d: %w", p, err)
	}
	defer stopPull()
	for {
		batch := bus.Batch(ctx, msgs, maxBatch)
		if batch == nil {
			return nil
		}
		// Work on a context that outlives shutdown, so the batch in hand
		// is finished and acked rather than abandoned.
		if err := s.handle(context.WithoutCancel(ctx), p, batch); err != nil && ctx.Err() == nil {
			return err
		}
		if s.o.AfterBatch != nil {
			s.o.AfterBatch()
		}
	}
}
