package store

// The embedded store's counters: the global page budget (TakeBudget), the
// partitions' Stats and the commit metrics.

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
)

// TakeBudget takes up to n units of the global page budget. It grants from
// memory, without a write of its own: the next group commit carries the
// count (budget.flush), so a crawl with --max-pages issues from reservations
// as one without does, and commits by the interval, not once per issue.
//
// Why a crash costs nothing: a task's budget is taken before the step that
// records it runs, so the commit that makes the task durable carries its
// budget too. What a crash loses is budget taken for tasks no commit
// recorded; the replay records them again and takes their budget again,
// once. Only a bbolt file's one process takes from it, so memory is the
// truth while it runs.
func (b *Bolt) TakeBudget(ctx context.Context, n, max int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if b.writes.isClosed() {
		return 0, ErrClosed
	}
	if n <= 0 {
		return 0, nil
	}
	return b.budget.take(n, max), nil
}

// pageBudget is the crawl-wide page budget taken so far, in memory, and the
// count of pages parsed in process (CountParsedInProcess); the group commit
// writes them into every transaction after they moved.
type pageBudget struct {
	mu     sync.Mutex
	issued uint64 // taken so far
	parsed uint64 // pages parsed in process with no document on a stream
}

func (pb *pageBudget) take(n, max int) int {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	g := grant(n, max, pb.issued)
	pb.issued += uint64(g)
	return g
}

func (pb *pageBudget) taken() uint64 {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	return pb.issued
}

// flush writes the budget taken so far into tx when it differs from the
// file's; every group transaction ends with it.
func (pb *pageBudget) flush(tx *bolt.Tx) error {
	pb.mu.Lock()
	issued, parsed := pb.issued, pb.parsed
	pb.mu.Unlock()
	g := tx.Bucket(bucketGlobal)
	var moved []kv
	if getU64(g, globalIssued) != issued {
		moved = append(moved, kv{globalIssued, issued})
	}
	if getU64(g, globalParsedInProcess) != parsed {
		moved = append(moved, kv{globalParsedInProcess, parsed})
	}
	return putMeta(g, moved...)
}

func (pb *pageBudget) parsedInProcess() uint64 {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	return pb.parsed
}

// CountParsedInProcess counts a page parsed in this process whose document
// went to no stream (`trawler run` with nothing that could read
// pages.parsed): the crawl's page count (Stats.ParsedInProcess, added to
// the parsed stream's by crawlstate) takes these in. Like the budget it is
// kept in memory and written with every group commit; a crash loses at
// most the count of pages whose done reports no commit recorded either,
// which are fetched, and counted, again.
func (b *Bolt) CountParsedInProcess() {
	b.budget.mu.Lock()
	b.budget.parsed++
	b.budget.mu.Unlock()
}

// Stats sums the counters of the given partitions.
func (b *Bolt) Stats(ctx context.Context, partitions []int) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	var s Stats
	now := time.Now()
	err := b.view(func(tx *bolt.Tx) error {
		s.Issued = b.budget.taken()
		s.ParsedInProcess = b.budget.parsedInProcess()
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
