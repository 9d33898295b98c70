package store

// The embedded store: the Bolt type and its bucket layout, opening and
// closing the file, and the transaction and bucket helpers of the bolt_*.go
// files.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Bolt is the embedded Store: one bbolt file, used by the all-in-one mode.
//
// Layout: a top-level bucket "p/<n>" per partition holding the sub-buckets
// seen (8-byte big-endian fingerprint -> empty), queue (host 0x00 8-byte
// rank 8-byte order -> JSON Queued, see rank), inflight (host -> JSON
// InFlight), rest (host -> 8-byte unix ms NotBefore), issued (host -> 8-byte
// URLs issued, for the host budget), meta (counters, 8-byte big-endian)
// and the revisit schedule (sched, sched-url: bolt_schedule.go), plus a "global" bucket for the page budget.
// Every mutating method is atomic, and durable (fsynced) when it returns: it
// runs in a bbolt transaction shared with the other writes of its group
// (groupCommit), and returns once that transaction committed.
type Bolt struct {
	db     *bolt.DB
	writes *groupCommit
	limits Limits
	budget *pageBudget // --max-pages' count, in memory; see TakeBudget
}

var _ Store = (*Bolt)(nil)

// boltOpenTimeout bounds the wait for bbolt's file lock: a second process on
// the same file fails fast with a clear error instead of hanging.
const boltOpenTimeout = 2 * time.Second

var (
	bucketGlobal   = []byte("global")
	bucketSeen     = []byte("seen")
	bucketQueue    = []byte("queue")
	bucketInFlight = []byte("inflight")
	bucketMeta     = []byte("meta")
	bucketRest     = []byte("rest")
	bucketIssued   = []byte("issued")
	// bucketQueueLen counts each host's queued URLs, for the queue cap
	// (addQueueCount): counting by a scan of the host's range made every
	// enqueue cost the length of its queue, a site crawled alone quadratic.
	bucketQueueLen = []byte("queuelen")
)

// Meta and global counter keys.
const (
	metaApplied  = "applied"
	metaQueued   = "queued"
	metaInFlight = "inflight"
	metaEnqueued = "enqueued"
	metaSeen     = "seen" // fingerprints in the seen bucket
	metaHead     = "head" // lowest queue order number in use (Expire pushes below it)
	metaTail     = "tail" // next queue order number for an append
	metaDropped  = "dropped"
	// metaDroppedQueue: the part of metaDropped that a full queue pushed
	// out (Limits.HostQueue); the rest went over a host's budget.
	metaDroppedQueue = "dropped_queue"
	globalIssued     = "issued"
	// globalParsedInProcess counts the pages whose documents went to no
	// stream (Bolt.CountParsedInProcess).
	globalParsedInProcess = "parsed_in_process"
)

// orderStart is where head and tail start, so that both appends (tail up)
// and pushes to the front (head down) have 2^63 numbers of room.
const orderStart = uint64(1) << 63

// BoltOptions tune the embedded store's group commit (see groupCommit).
type BoltOptions struct {
	// CommitInterval is the least time from one commit's start to the
	// next's while many callers write (DefaultCommitInterval; negative:
	// commit as soon as the previous commit is done). It bounds the commits
	// to 1/CommitInterval a second under load, and adds up to that much to
	// a write's wait.
	CommitInterval time.Duration
	// PaceFrom is how many writes a paced group needs for the pacing to
	// go on (DefaultPaceFrom; at least 2): fewer mean the writes depend on
	// each other rather than wait for company.
	PaceFrom int
}

// Defaults of BoltOptions: at most ~33 commits (67 fdatasyncs) a second
// while three or more callers write; docs/store.md has the measurements.
// 30 ms, not 50: a done report that waits for a paced step can hold its
// host up to about two intervals past its politeness gap, and at 50 ms a
// 100 ms crawl lost ~4 % of its turns to 180-200 ms gaps
// (docs/benchmarks.md, "The commit interval").
const (
	DefaultCommitInterval = 30 * time.Millisecond
	DefaultPaceFrom       = 3
)

// OpenBolt opens (creating if needed) the bbolt file at path, with the
// default BoltOptions.
func OpenBolt(path string) (*Bolt, error) { return OpenBoltWith(path, BoltOptions{}) }

// OpenBoltWith opens (creating if needed) the bbolt file at path.
func OpenBoltWith(path string, o BoltOptions) (*Bolt, error) {
	if o.CommitInterval == 0 {
		o.CommitInterval = DefaultCommitInterval
	}
	if o.PaceFrom <= 0 {
		o.PaceFrom = DefaultPaceFrom
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: boltOpenTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store: open %s: file is locked (data dir in use by another trawler process?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	budget := &pageBudget{}
	err = db.Update(func(tx *bolt.Tx) error {
		g, err := tx.CreateBucketIfNotExists(bucketGlobal)
		if err == nil {
			budget.issued = getU64(g, globalIssued)
			budget.parsed = getU64(g, globalParsedInProcess)
		}
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: init %s: %w", path, err)
	}
	writes := newGroupCommit(db, o.CommitInterval, o.PaceFrom)
	writes.flush = budget.flush
	return &Bolt{db: db, writes: writes, budget: budget}, nil
}

// Close commits the writes waiting for their group, then closes the file;
// later calls return ErrClosed.
func (b *Bolt) Close() error {
	b.writes.close()
	// Budget taken since the last group (a crawl's last issues) is kept.
	if err := b.db.Update(b.budget.flush); err != nil && !errors.Is(err, berrors.ErrDatabaseNotOpen) {
		b.db.Close()
		return fmt.Errorf("store: close: %w", err)
	}
	return b.db.Close()
}

// update and view map bbolt's "not open" to ErrClosed.
// update runs fn in a write transaction shared with the callers waiting
// meanwhile (groupCommit): the frontier partitions and dedup of the
// all-in-one mode pay one commit per group instead of one each, paced under
// load to one per CommitInterval, and a chain of dependent writes does not
// wait for company. fn may run more than once (when another fn of its group
// fails), so it must set its results afresh. update returns once fn's
// group is committed (durable) or failed.
func (b *Bolt) update(fn func(*bolt.Tx) error) error { return boltErr(b.writes.update(fn, false)) }

// updateNow is update for a write its caller waits on with nothing else to
// do (a partition's load, the page budget taken before an issue): it does
// not wait for company.
func (b *Bolt) updateNow(fn func(*bolt.Tx) error) error { return boltErr(b.writes.update(fn, true)) }

func (b *Bolt) view(fn func(*bolt.Tx) error) error { return boltErr(b.db.View(fn)) }

func boltErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func partName(p int) []byte { return []byte("p/" + strconv.Itoa(p)) }

// readPart returns partition p's bucket, or nil if p was never written.
func readPart(tx *bolt.Tx, p int) *bolt.Bucket { return tx.Bucket(partName(p)) }

// writePart returns partition p's bucket, creating it and its sub-buckets.
func writePart(tx *bolt.Tx, p int) (*bolt.Bucket, error) {
	part, err := tx.CreateBucketIfNotExists(partName(p))
	if err != nil {
		return nil, err
	}
	for _, name := range [][]byte{bucketSeen, bucketQueue, bucketInFlight, bucketMeta, bucketRest, bucketIssued, bucketSched, bucketSchedURL, bucketQueueLen} {
		if _, err := part.CreateBucketIfNotExists(name); err != nil {
			return nil, err
		}
	}
	// A host's URLs are added at the end of its range of the queue (the
	// order counter grows), so a page that splits is not written again:
	// filled to bbolt's default half, the queue took twice the pages (and
	// the store file, mapped, twice the memory) of the URLs it held.
	part.Bucket(bucketQueue).FillPercent = queueFill
	return part, nil
}

// queueFill is how full the queue bucket's pages are left when they split.
const queueFill = 0.9

// be64 encodes fingerprints and counters: big-endian sorts like the numbers.
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

type kv struct {
	key string
	val uint64
}

func getU64(b *bolt.Bucket, key string) uint64 { return getU64Or(b, key, 0) }

func getU64Or(b *bolt.Bucket, key string, def uint64) uint64 {
	v := b.Get([]byte(key))
	if len(v) != 8 {
		return def
	}
	return binary.BigEndian.Uint64(v)
}

// putMeta writes counters; signed ones (queued, inflight) are stored as
// their two's-complement uint64, so plain uint64 arithmetic works on them.
func putMeta(b *bolt.Bucket, kvs ...kv) error {
	for _, e := range kvs {
		if err := b.Put([]byte(e.key), be64(e.val)); err != nil {
			return err
		}
	}
	return nil
}
