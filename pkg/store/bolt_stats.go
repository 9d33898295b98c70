package store

// The embedded store's counters: the global page budget (TakeBudget), the
// partitions' Stats and the commit metrics.

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
)

// TakeBudget takes up to n units of the global page budget.
func (b *Bolt) TakeBudget(ctx context.Context, n, max int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, nil
	}
	granted := 0
	err := b.updateNow(func(tx *bolt.Tx) error {
		g := tx.Bucket(bucketGlobal)
		issued := getU64(g, globalIssued)
		granted = grant(n, max, issued)
		return putMeta(g, kv{globalIssued, issued + uint64(granted)})
	})
	if err != nil {
		return 0, err
	}
	return granted, nil
}

// Stats sums the counters of the given partitions.
func (b *Bolt) Stats(ctx context.Context, partitions []int) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	var s Stats
	now := time.Now()
	err := b.view(func(tx *bolt.Tx) error {
		s.Issued = getU64(tx.Bucket(bucketGlobal), globalIssued)
		for _, p := range partitions {
			part := readPart(tx, p)
			if part == nil {
				continue
			}
			meta := part.Bucket(bucketMeta)
			s.Queued += int64(getU64(meta, metaQueued))
			s.InFlight += int64(getU64(meta, metaInFlight))
			s.Enqueued += getU64(meta, metaEnqueued)
			s.Dropped += getU64(meta, metaDropped)
			s.DroppedQueue += getU64(meta, metaDroppedQueue)
			s.Scheduled += int64(getU64(meta, metaScheduled))
			dueNow, dueHour := schedCounts(part, now)
			s.DueNow += dueNow
			s.DueHour += dueHour
		}
		return nil
	})
	return s, err
}

// Commits counts the write transactions committed since the store opened
// (each one fsync pair), for trawler_store_commits_total.
func (b *Bolt) Commits() int64 { return b.writes.commits.Load() }

// Writes counts the writes (mutating calls) committed since the store
// opened, for trawler_store_writes_total: Writes / Commits is the mean group.
func (b *Bolt) Writes() int64 { return b.writes.writes.Load() }

// Collectors are the store's Prometheus counters: trawler_store_commits_total
// and trawler_store_writes_total.
func (b *Bolt) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Subsystem: "store", Name: "commits_total",
			Help: "Transactions the embedded store committed (two fdatasyncs each)."},
			func() float64 { return float64(b.Commits()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Subsystem: "store", Name: "writes_total",
			Help: "Writes the embedded store committed, in groups that share a transaction."},
			func() float64 { return float64(b.Writes()) }),
	}
}
