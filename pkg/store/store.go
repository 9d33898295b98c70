// Package store holds the crawl's durable state behind one interface with two
// backends: Redis (cluster mode; keys hash-tagged by partition so they work on
// one Redis, a client-side ring of shards and Redis Cluster) and an embedded
// bbolt file (the all-in-one mode). The same conformance tests run against both.
//
// All state is per host partition (see urlx.Partition); a partition has one
// owner at a time, so operations on one partition are never concurrent.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("store: closed")

// Store is everything the dedup and frontier services keep.
type Store interface {
	SeenSet
	Frontier
	Close() error
}

// ErrSeenFormat is returned (wrapped, with the partition and what was found)
// when a partition's stored seen set has a layout this build does not read,
// e.g. one written with another bucket count. Such data needs a new crawl.
var ErrSeenFormat = errors.New("store: seen set stored in another format")

// SeenSet is the authoritative set of URL fingerprints already discovered.
type SeenSet interface {
	// Seen reports for each fingerprint whether partition p recorded it.
	Seen(ctx context.Context, p int, fps []uint64) ([]bool, error)
	// Record adds fingerprints to partition p's set; recording twice is harmless.
	Record(ctx context.Context, p int, fps []uint64) error
	// Scan calls fn with every fingerprint of partition p, in ascending order
	// and in chunks (each a new, non-empty slice that fn may keep), e.g. to
	// rebuild a Bloom filter when a partition is taken over. An error from fn
	// stops the scan and is returned as is. fn may call the store. Scan is
	// not a snapshot: run it while nobody records into p (the owner's job).
	Scan(ctx context.Context, p int, fn func(fps []uint64) error) error
	// Count returns the number of distinct fingerprints partition p recorded.
	Count(ctx context.Context, p int) (int64, error)
}

// Queued is a URL waiting in its host's queue.
type Queued struct {
	Host string        `json:"host"`
	Link messages.Link `json:"link"`
	// Attempt is 1 for a URL never issued, n+1 after n lost tasks.
	Attempt int `json:"attempt"`
}

// InFlight is a task issued to the fetchers and not yet reported done.
type InFlight struct {
	Task       messages.FetchTask `json:"task"`
	LeaseUntil time.Time          `json:"lease_until"`
	// Next is the host's next queue entry as the pop that issued this task
	// left it, when the store reads it (derived task IDs, the host's budget
	// not spent by the next pop); nil otherwise. Not stored.
	Next *Next `json:"-"`
}

// Next is a host's next queue entry, read by the pop that issued the host's
// task (a reservation). The frontier may publish it as the host's next task
// as soon as that task is done, before any write records it; the write that
// records it then pops exactly this entry (Issue.Next), under the same
// derived ID. See docs/frontier.md, "The reserved next task".
type Next struct {
	Key    []byte // the entry's queue key (host, rank, order), as the store writes it
	TaskID string // DerivedTaskID of the entry
	Queued Queued
	Rank   uint64 // the entry's rank (order.go): lower goes first
	// Then, when the store reads it (the embedded store, the host's budget
	// allowing two more pops), is the entry after this one: the host's
	// task after the reserved one, which the frontier may publish when the
	// reserved task's fetch ends before the write that records it has run
	// (docs/frontier.md, "Two tasks reserved"). Popped, as Next is, by its
	// key under its derived ID.
	Then *Next
}

// Task is the task that popping n for r records: the same, field for
// field, as the store's.
func (n *Next) Task(p int, r Issue) InFlight {
	r.TaskID = n.TaskID
	return newInFlight(p, n.Queued, r)
}

// Outranked tells whether a URL l queued for the host would go before n:
// ranked strictly above it (a shorter depth, or a higher score). A URL of
// the same rank goes after it (arrival order).
func (n *Next) Outranked(l messages.Link) bool {
	return rank(l) < n.Rank
}

// Done frees a host whose task finished.
type Done struct {
	Host   string
	TaskID string
	// NotBefore is when the host may be fetched again (its politeness gap);
	// kept with the host so a restarted frontier holds it too.
	NotBefore time.Time
	// Revisit, in a continuous crawl, is the URL's next visit: when the
	// done frees its host, the entry goes into the partition's revisit
	// schedule in the same write (replacing any entry of the same URL).
	Revisit *Scheduled
}

// Scheduled is a URL waiting in its partition's revisit schedule until Due,
// when the frontier moves it into its host's queue (StepRequest.Promote).
// A URL is in the schedule at most once: entries are keyed by URL.
type Scheduled struct {
	Due    time.Time
	Queued Queued // Queued.Link.Revisit carries the URL's record
}

// Issue asks to pop the head URL of Host and record it in flight as task
// TaskID. The store fills in the task's URL, depth, hops and attempt.
type Issue struct {
	Host string
	// TaskID names the task; empty, the store derives it from the queue
	// entry popped (DerivedTaskID), so that popping the same entry again
	// — the replay of a write lost in a crash — gives the same ID.
	TaskID     string
	IssuedAt   time.Time
	Deadline   time.Time
	LeaseUntil time.Time
	NotBefore  time.Time // zero, or the earliest start of the request
	// Next, when set (from the host's task in flight before,
	// InFlight.Next), is the entry to pop instead of the head, under its
	// derived ID; TaskID must be empty. If the entry is gone (which the
	// frontier's rules prevent) the host is skipped: its task was published
	// already, so popping another entry would put a second one in flight.
	Next *Next
}

// HostState is a host with queued URLs, a task in flight or a politeness
// gap still running.
type HostState struct {
	Host      string
	Queued    int
	InFlight  *InFlight // nil when no task is in flight
	NotBefore time.Time // zero, or when the host may next be fetched
}

// PartitionState is what a frontier loads when it takes a partition over.
type PartitionState struct {
	// Applied is the stream sequence of the last intake batch applied.
	Applied uint64
	Hosts   []HostState
}

// Stats are totals over some partitions, for status and termination.
type Stats struct {
	Queued   int64  // URLs waiting in host queues
	InFlight int64  // tasks issued and not done
	Enqueued uint64 // URLs ever queued (monotonic: a change means work moved)
	Issued   uint64 // budget taken so far (global, see TakeBudget)
	// ParsedInProcess counts the pages parsed with no document on
	// pages.parsed, over the crawl's life (global; the embedded store's
	// CountParsedInProcess; 0 elsewhere).
	ParsedInProcess uint64
	Dropped         uint64 // URLs dropped by the per-host limits (see Limits), both
	// DroppedQueue is the part of Dropped that HostQueue pushed out of a
	// full queue; the rest went over a host's HostBudget (DroppedBudget).
	DroppedQueue uint64
	// Scheduled counts URLs waiting in the revisit schedule; DueNow those
	// due already, DueHour those due within the next hour (DueNow
	// included), at the time of the call.
	Scheduled, DueNow, DueHour int64
}

// DroppedBudget is the part of Dropped over a host's HostBudget.
func (s Stats) DroppedBudget() uint64 { return s.Dropped - min(s.DroppedQueue, s.Dropped) }

// Frontier is the frontier's durable state: per-host priority queues, tasks
// in flight, hosts' politeness times, an apply counter and the intake log that
// make replays harmless.
//
// A host's queue is ordered by a higher Link.Score first, then a smaller
// depth, then arrival: breadth-first by depth when no URL carries a score,
// best-first when they do.
type Frontier interface {
	// SetLimits sets the per-host limits applied from now on.
	SetLimits(Limits)

	// Apply atomically applies one intake batch of partition p whose highest
	// stream sequence is seq: enqueue adds URLs to their hosts' queues (a
	// host over its budget takes none; a full queue drops its lowest-priority
	// URL), done frees hosts whose in-flight task ID matches (others are
	// stale and ignored) and records their NotBefore. If seq is not above the
	// partition's applied sequence the batch was applied before: nothing
	// changes and ok is false.
	Apply(ctx context.Context, p int, seq uint64, enqueue []Queued, done []Done) (ok bool, err error)

	// Pop removes the head URL of each requested host (which must have no task
	// in flight) and records it in flight, atomically per host. It returns the
	// tasks in request order; a host whose queue turned out empty is skipped,
	// and so is one whose budget is spent (its queue is dropped).
	Pop(ctx context.Context, p int, reqs []Issue) ([]InFlight, error)

	// Expire handles a task whose lease ran out: when attempts remain
	// (Attempt < maxAttempts) its URL goes back to the head of the host's queue
	// with Attempt+1, otherwise it is dropped. Either way the host is freed.
	// It reports whether the URL was requeued; a task ID that no longer
	// matches the host's in-flight task is ignored.
	Expire(ctx context.Context, p int, host, taskID string, maxAttempts int) (requeued bool, err error)

	// Load returns partition p's applied sequence and every host with queued
	// URLs, a task in flight or a NotBefore still ahead.
	Load(ctx context.Context, p int) (PartitionState, error)

	// TakeBudget atomically takes up to n units of the crawl-wide page budget
	// (max <= 0 means unlimited) and returns how many were granted. The
	// embedded store grants from memory and makes the count durable with
	// its next commit (a task's budget no later than the step recording it).
	TakeBudget(ctx context.Context, n, max int) (int, error)

	// Stats sums queue depths and counters over the given partitions.
	Stats(ctx context.Context, partitions []int) (Stats, error)

	// Applied reports which of seqs (stream sequences of partition p's
	// intake) were marked applied; see applied.go for why a watermark is not
	// enough.
	Applied(ctx context.Context, p int, seqs []uint64) ([]bool, error)
	// MarkApplied remembers seqs as applied and forgets those at or below
	// floor (the consumer's ack floor: they can never be delivered again).
	MarkApplied(ctx context.Context, p int, seqs []uint64, floor uint64) error
	// LastApplied is the highest sequence partition p's intake log holds
	// (0: none). A sequence above it was never applied, as long as the
	// log's floor only passes acked messages, which are never delivered
	// again: the frontier asks Applied only about sequences at or below it.
	LastApplied(ctx context.Context, p int) (uint64, error)

	// Due returns up to max entries of partition p's revisit schedule due
	// at or before now, earliest first. It changes nothing: the step that
	// queues them removes them (StepRequest.Promote).
	Due(ctx context.Context, p int, now time.Time, max int) ([]Scheduled, error)
}
