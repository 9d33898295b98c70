package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// Bolt is the embedded Store: one bbolt file, used by the all-in-one mode.
//
// Layout: a top-level bucket "p/<n>" per partition holding the sub-buckets
// seen (8-byte big-endian fingerprint -> empty), queue (host 0x00 8-byte
// rank 8-byte order -> JSON Queued, see rank), inflight (host -> JSON
// InFlight), rest (host -> 8-byte unix ms NotBefore), issued (host -> 8-byte
// URLs issued, for the host budget) and meta (counters, 8-byte big-endian),
// plus a "global" bucket for the page budget.
// Every mutating method is atomic, and durable (fsynced) when it returns: it
// runs in a bbolt transaction shared with the other writes of its group
// (groupCommit), and returns once that transaction committed.
type Bolt struct {
	db     *bolt.DB
	writes *groupCommit
	limits Limits
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

// Defaults of BoltOptions: at most 20 commits (40 fdatasyncs) a second while
// three or more callers write; docs/store.md has the measurements.
const (
	DefaultCommitInterval = 50 * time.Millisecond
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
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketGlobal)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: init %s: %w", path, err)
	}
	return &Bolt{db: db, writes: newGroupCommit(db, o.CommitInterval, o.PaceFrom)}, nil
}

// Close commits the writes waiting for their group, then closes the file;
// later calls return ErrClosed.
func (b *Bolt) Close() error {
	b.writes.close()
	return b.db.Close()
}

// Seen reports which fingerprints partition p recorded.
func (b *Bolt) Seen(ctx context.Context, p int, fps []uint64) ([]bool, error) {
	if err := checkArgs(ctx, p); err != nil {
		return nil, err
	}
	out := make([]bool, len(fps))
	err := b.view(func(tx *bolt.Tx) error {
		part := readPart(tx, p)
		if part == nil {
			return nil
		}
		// A cursor seek tells "present" apart from "absent" without relying on
		// how bbolt returns zero-length values.
		c := part.Bucket(bucketSeen).Cursor()
		var key [8]byte
		for i, fp := range fps {
			binary.BigEndian.PutUint64(key[:], fp)
			k, _ := c.Seek(key[:])
			out[i] = bytes.Equal(k, key[:])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Record adds fingerprints to partition p's seen set.
func (b *Bolt) Record(ctx context.Context, p int, fps []uint64) error {
	if err := checkArgs(ctx, p); err != nil {
		return err
	}
	if len(fps) == 0 {
		return nil
	}
	// Sorted inserts touch each B+tree page once.
	sorted := sortedDistinct(fps)
	return b.update(func(tx *bolt.Tx) error {
		part, err := writePart(tx, p)
		if err != nil {
			return err
		}
		seen, meta := part.Bucket(bucketSeen), part.Bucket(bucketMeta)
		n := seenCount(seen, meta)
		c := seen.Cursor()
		for _, fp := range sorted {
			key := be64(fp)
			if k, _ := c.Seek(key); bytes.Equal(k, key) {
				continue // already recorded
			}
			if err := seen.Put(key, []byte{}); err != nil {
				return err
			}
			n++
		}
		return putMeta(meta, kv{metaSeen, n})
	})
}

// seenCount is the meta counter of recorded fingerprints. A file written
// before the counter existed has none: then the seen bucket is counted once
// (Record stores the result).
func seenCount(seen, meta *bolt.Bucket) uint64 {
	if v := meta.Get([]byte(metaSeen)); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return uint64(seen.Stats().KeyN)
}

// Count returns the number of fingerprints partition p recorded.
func (b *Bolt) Count(ctx context.Context, p int) (int64, error) {
	if err := checkArgs(ctx, p); err != nil {
		return 0, err
	}
	var n uint64
	err := b.view(func(tx *bolt.Tx) error {
		if part := readPart(tx, p); part != nil {
			n = seenCount(part.Bucket(bucketSeen), part.Bucket(bucketMeta))
		}
		return nil
	})
	return int64(n), err
}

// Scan streams partition p's fingerprints in key (= numeric) order. Each
// chunk is read in its own read transaction and fn runs outside it: a read
// transaction held across fn would deadlock an fn that writes to the store
// (bbolt's remap on growth waits for all readers) and would pin old pages
// for as long as a Bloom filter rebuild takes. The next chunk resumes after
// the last key; one owner per partition means nothing moves in between.
func (b *Bolt) Scan(ctx context.Context, p int, fn func(fps []uint64) error) error {
	if err := checkArgs(ctx, p); err != nil {
		return err
	}
	var after []byte // last key handed out; nil before the first chunk
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := make([]uint64, 0, scanChunk)
		err := b.view(func(tx *bolt.Tx) error {
			part := readPart(tx, p)
			if part == nil {
				return nil
			}
			c := part.Bucket(bucketSeen).Cursor()
			k, _ := c.First()
			if after != nil {
				if k, _ = c.Seek(after); bytes.Equal(k, after) {
					k, _ = c.Next()
				}
			}
			for ; k != nil && len(chunk) < scanChunk; k, _ = c.Next() {
				if len(k) != 8 {
					return fmt.Errorf("store: partition %d: corrupt seen key %x", p, k)
				}
				chunk = append(chunk, binary.BigEndian.Uint64(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			return nil
		}
		if err := fn(chunk); err != nil {
			return err
		}
		if len(chunk) < scanChunk {
			return nil
		}
		after = be64(chunk[len(chunk)-1])
	}
}

// SetLimits sets the per-host limits; see Limits.
func (b *Bolt) SetLimits(l Limits) { b.limits = l }

// Apply applies one intake batch; see Frontier.Apply.
func (b *Bolt) Apply(ctx context.Context, p int, seq uint64, enqueue []Queued, done []Done) (bool, error) {
	if err := checkArgs(ctx, p); err != nil {
		return false, err
	}
	items, err := encodeQueued(enqueue)
	if err != nil {
		return false, err
	}
	applied := false
	err = b.update(func(tx *bolt.Tx) (err error) {
		applied, err = b.applyTx(tx, p, seq, items, done)
		return err
	})
	if err != nil {
		return false, err // rolled back
	}
	return applied, nil
}

// Pop issues the head URL of each requested host; see Frontier.Pop.
func (b *Bolt) Pop(ctx context.Context, p int, reqs []Issue) ([]InFlight, error) {
	return b.PopEarly(ctx, p, reqs, nil)
}

// applyTx is Apply within tx; see Frontier.Apply.
func (b *Bolt) applyTx(tx *bolt.Tx, p int, seq uint64, items []encodedQueued, done []Done) (bool, error) {
	var last uint64
	if old := readPart(tx, p); old != nil {
		last = getU64(old.Bucket(bucketMeta), metaApplied)
	}
	if seq <= last {
		return false, nil // a replay of a batch already applied
	}
	part, err := writePart(tx, p)
	if err != nil {
		return false, err
	}
	meta, queue, inflight := part.Bucket(bucketMeta), part.Bucket(bucketQueue), part.Bucket(bucketInFlight)
	rest, issued := part.Bucket(bucketRest), part.Bucket(bucketIssued)

	tail := getU64Or(meta, metaTail, orderStart)
	added, dropped, queueDropped := uint64(0), uint64(0), uint64(0)
	for _, it := range items {
		if b.limits.HostBudget > 0 && getU64(issued, it.host) >= uint64(b.limits.HostBudget) {
			dropped++
			continue
		}
		if err := queue.Put(queueKey(it.host, it.rank, tail), it.data); err != nil {
			return false, err
		}
		tail++
		added++
		if b.limits.HostQueue > 0 && queueLen(queue, it.host) > b.limits.HostQueue {
			if err := queue.Delete(queueTail(queue, it.host)); err != nil {
				return false, err
			}
			added--
			dropped++
			queueDropped++
		}
	}
	freed := int64(0)
	for _, d := range done {
		in, ok, err := getInFlight(inflight, p, d.Host)
		if err != nil {
			return false, err
		}
		if !ok || in.Task.ID != d.TaskID {
			continue // stale: the host moved on to another task
		}
		if err := inflight.Delete([]byte(d.Host)); err != nil {
			return false, err
		}
		if !d.NotBefore.IsZero() {
			if err := rest.Put([]byte(d.Host), be64(uint64(d.NotBefore.UnixMilli()))); err != nil {
				return false, err
			}
		}
		freed++
	}
	return true, putMeta(meta,
		kv{metaTail, tail},
		kv{metaApplied, seq},
		kv{metaEnqueued, getU64(meta, metaEnqueued) + added},
		kv{metaQueued, getU64(meta, metaQueued) + added},
		kv{metaDropped, getU64(meta, metaDropped) + dropped},
		kv{metaDroppedQueue, getU64(meta, metaDroppedQueue) + queueDropped},
		kv{metaInFlight, getU64(meta, metaInFlight) - uint64(freed)},
	)
}

// popTx is Pop within tx; see Frontier.Pop.
func (b *Bolt) popTx(tx *bolt.Tx, p int, reqs []Issue) ([]InFlight, error) {
	var out []InFlight
	part := readPart(tx, p) // sub-buckets are created together with it
	if part == nil {
		return nil, nil
	}
	meta, queue, inflight := part.Bucket(bucketMeta), part.Bucket(bucketQueue), part.Bucket(bucketInFlight)
	rest, issued := part.Bucket(bucketRest), part.Bucket(bucketIssued)
	var dropped uint64
	for _, r := range reqs {
		if validHost(r.Host) != nil || inflight.Get([]byte(r.Host)) != nil {
			continue
		}
		n := getU64(issued, r.Host)
		if b.limits.HostBudget > 0 && n >= uint64(b.limits.HostBudget) {
			d, err := dropQueue(queue, r.Host)
			if err != nil {
				return nil, err
			}
			dropped += uint64(d)
			continue
		}
		derived := r.TaskID == ""
		key, val := queueHead(queue, r.Host)
		if r.Next != nil {
			// The reserved entry, published already: that one or none.
			key, val = nil, nil
			if k := r.Next.Key; derived && len(k) == len(r.Host)+queueKeyTail && string(k[:len(r.Host)]) == r.Host {
				if v := queue.Get(k); v != nil {
					key, val = k, v
				}
			}
		}
		if key == nil {
			continue
		}
		var q Queued
		if err := json.Unmarshal(val, &q); err != nil {
			return nil, fmt.Errorf("store: partition %d: corrupt queue entry of host %q (key %x): %w", p, r.Host, key, err)
		}
		if derived {
			r.TaskID = DerivedTaskID(p, key, q)
		}
		in := newInFlight(p, q, r)
		data, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		if err := queue.Delete(slices.Clone(key)); err != nil {
			return nil, err
		}
		if err := inflight.Put([]byte(r.Host), data); err != nil {
			return nil, err
		}
		if err := issued.Put([]byte(r.Host), be64(n+1)); err != nil {
			return nil, err
		}
		if err := rest.Delete([]byte(r.Host)); err != nil {
			return nil, err
		}
		if derived && (b.limits.HostBudget <= 0 || n+1 < uint64(b.limits.HostBudget)) {
			// The reservation: the host's head now, which its next pop
			// will take unless a URL ranked above it arrives first.
			if k, v := queueHead(queue, r.Host); k != nil {
				var nq Queued
				if err := json.Unmarshal(v, &nq); err != nil {
					return nil, fmt.Errorf("store: partition %d: corrupt queue entry of host %q (key %x): %w", p, r.Host, k, err)
				}
				in.Next = &Next{Key: slices.Clone(k), TaskID: DerivedTaskID(p, k, nq), Queued: nq}
			}
		}
		out = append(out, in)
	}
	n := uint64(len(out))
	return out, putMeta(meta,
		kv{metaQueued, getU64(meta, metaQueued) - n - dropped},
		kv{metaDropped, getU64(meta, metaDropped) + dropped},
		kv{metaInFlight, getU64(meta, metaInFlight) + n},
	)
}

// Expire handles a task whose lease ran out; see Frontier.Expire.
func (b *Bolt) Expire(ctx context.Context, p int, host, taskID string, maxAttempts int) (bool, error) {
	if err := checkArgs(ctx, p); err != nil {
		return false, err
	}
	requeued := false
	err := b.update(func(tx *bolt.Tx) error {
		requeued = false
		part := readPart(tx, p)
		if part == nil {
			return nil
		}
		in, ok, err := getInFlight(part.Bucket(bucketInFlight), p, host)
		if err != nil || !ok || in.Task.ID != taskID {
			return err // no task, or a stale one: ignore
		}
		meta := part.Bucket(bucketMeta)
		if err := part.Bucket(bucketInFlight).Delete([]byte(host)); err != nil {
			return err
		}
		counters := []kv{{metaInFlight, getU64(meta, metaInFlight) - 1}}
		if in.Task.Attempt < maxAttempts {
			data, err := json.Marshal(retry(in))
			if err != nil {
				return err
			}
			head := getU64Or(meta, metaHead, orderStart) - 1
			if err := part.Bucket(bucketQueue).Put(queueKey(host, rank(retry(in).Link), head), data); err != nil {
				return err
			}
			counters = append(counters, kv{metaHead, head}, kv{metaQueued, getU64(meta, metaQueued) + 1})
			requeued = true
		}
		return putMeta(meta, counters...)
	})
	if err != nil {
		return false, err // rolled back
	}
	return requeued, nil
}

// Load returns partition p's applied sequence and its non-idle hosts, and
// forgets politeness times that have passed.
func (b *Bolt) Load(ctx context.Context, p int) (PartitionState, error) {
	if err := checkArgs(ctx, p); err != nil {
		return PartitionState{}, err
	}
	var st PartitionState
	now := time.Now()
	err := b.update(func(tx *bolt.Tx) error {
		st = PartitionState{}
		part := readPart(tx, p)
		if part == nil {
			return nil
		}
		if _, err := writePart(tx, p); err != nil { // sub-buckets of older files
			return err
		}
		st.Applied = getU64(part.Bucket(bucketMeta), metaApplied)
		hosts := map[string]*HostState{}
		state := func(h string) *HostState {
			if hosts[h] == nil {
				hosts[h] = &HostState{Host: h}
			}
			return hosts[h]
		}
		// Queue keys sort by host, so this is one sequential scan.
		err := part.Bucket(bucketQueue).ForEach(func(k, _ []byte) error {
			host, ok := hostOfQueueKey(k)
			if !ok {
				return fmt.Errorf("store: partition %d: corrupt queue key %x", p, k)
			}
			state(host).Queued++
			return nil
		})
		if err != nil {
			return err
		}
		err = part.Bucket(bucketInFlight).ForEach(func(k, v []byte) error {
			in, err := decodeInFlight(v)
			if err != nil {
				return fmt.Errorf("store: partition %d: corrupt in-flight entry of host %q: %w", p, k, err)
			}
			state(string(k)).InFlight = &in
			return nil
		})
		if err != nil {
			return err
		}
		rest := part.Bucket(bucketRest)
		var past [][]byte
		err = rest.ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("store: partition %d: corrupt rest entry of host %q", p, k)
			}
			at := time.UnixMilli(int64(binary.BigEndian.Uint64(v)))
			if !at.After(now) {
				past = append(past, slices.Clone(k))
				return nil
			}
			state(string(k)).NotBefore = at
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range past {
			if err := rest.Delete(k); err != nil {
				return err
			}
		}
		st.Hosts = sortedHosts(hosts)
		return nil
	})
	return st, err
}

// TakeBudget takes up to n units of the global page budget.
func (b *Bolt) TakeBudget(ctx context.Context, n, max int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, nil
	}
	granted := 0
	err := b.update(func(tx *bolt.Tx) error {
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
		}
		return nil
	})
	return s, err
}

// update and view map bbolt's "not open" to ErrClosed.
// update runs fn in a write transaction shared with the callers waiting
// meanwhile (groupCommit): the frontier partitions and dedup of the
// all-in-one mode pay one commit per group instead of one each, paced under
// load to one per CommitInterval, and a chain of dependent writes does not
// wait for company. fn may run more than once (when another fn of its group
// fails), so it must set its results afresh. update returns once fn's
// group is committed (durable) or failed.
func (b *Bolt) update(fn func(*bolt.Tx) error) error { return boltErr(b.writes.update(fn)) }
func (b *Bolt) view(fn func(*bolt.Tx) error) error   { return boltErr(b.db.View(fn)) }

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
	for _, name := range [][]byte{bucketSeen, bucketQueue, bucketInFlight, bucketMeta, bucketRest, bucketIssued} {
		if _, err := part.CreateBucketIfNotExists(name); err != nil {
			return nil, err
		}
	}
	return part, nil
}

// be64 encodes fingerprints and counters: big-endian sorts like the numbers.
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// queueKey is host 0x00 rank order: seeking to host 0x00 lands on the host's
// head (best rank, then oldest), and hosts never contain 0x00 (validHost), so
// one host's keys never mix with another's whose name it is a prefix of.
func queueKey(host string, rank, order uint64) []byte {
	k := make([]byte, 0, len(host)+queueKeyTail)
	k = append(k, host...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, rank)
	return binary.BigEndian.AppendUint64(k, order)
}

const queueKeyTail = 17 // 0x00, rank, order

func hostOfQueueKey(k []byte) (string, bool) {
	if len(k) < queueKeyTail || k[len(k)-queueKeyTail] != 0 {
		return "", false
	}
	return string(k[:len(k)-queueKeyTail]), true
}

// queueHead returns the key and value of host's first queued URL, or nil.
func queueHead(queue *bolt.Bucket, host string) (key, val []byte) {
	prefix := append([]byte(host), 0)
	k, v := queue.Cursor().Seek(prefix)
	if k == nil || !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+16 {
		return nil, nil
	}
	return k, v
}

// queueTail returns the key of host's last (lowest-priority) queued URL.
func queueTail(queue *bolt.Bucket, host string) []byte {
	c := queue.Cursor()
	after := append([]byte(host), 1) // the first key past host's range
	k, _ := c.Seek(after)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, append([]byte(host), 0)) || len(k) != len(host)+queueKeyTail {
		return nil
	}
	return slices.Clone(k)
}

// queueLen counts host's queued URLs (a scan of its range: used only when a
// queue cap is set).
func queueLen(queue *bolt.Bucket, host string) int {
	prefix := append([]byte(host), 0)
	n := 0
	c := queue.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+16 {
			n++
		}
	}
	return n
}

// dropQueue deletes all of host's queued URLs and returns how many.
func dropQueue(queue *bolt.Bucket, host string) (int, error) {
	prefix := append([]byte(host), 0)
	var keys [][]byte
	c := queue.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+16 {
			keys = append(keys, slices.Clone(k))
		}
	}
	for _, k := range keys {
		if err := queue.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func getInFlight(b *bolt.Bucket, p int, host string) (InFlight, bool, error) {
	v := b.Get([]byte(host))
	if v == nil {
		return InFlight{}, false, nil
	}
	in, err := decodeInFlight(v)
	if err != nil {
		return InFlight{}, false, fmt.Errorf("store: partition %d: corrupt in-flight entry of host %q: %w", p, host, err)
	}
	return in, true, nil
}

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

// ---- helpers shared by both backends, so their semantics stay identical ----

// checkArgs rejects a done context and a negative partition.
func checkArgs(ctx context.Context, p int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p < 0 {
		return fmt.Errorf("store: invalid partition %d", p)
	}
	return nil
}

// validHost rejects host names that would break the key layouts.
func validHost(h string) error {
	if h == "" || strings.ContainsRune(h, 0) {
		return fmt.Errorf("store: invalid host %q", h)
	}
	return nil
}

type encodedQueued struct {
	host string
	rank uint64
	data []byte
}

// encodeQueued validates and JSON-encodes an intake batch; a URL without an
// attempt count is a new one (Attempt 1).
func encodeQueued(enqueue []Queued) ([]encodedQueued, error) {
	out := make([]encodedQueued, len(enqueue))
	for i, q := range enqueue {
		if err := validHost(q.Host); err != nil {
			return nil, err
		}
		if q.Attempt < 1 {
			q.Attempt = 1
		}
		data, err := json.Marshal(q)
		if err != nil {
			return nil, fmt.Errorf("store: encode %s: %w", q.Link.URL, err)
		}
		out[i] = encodedQueued{q.Host, rank(q.Link), data}
	}
	return out, nil
}

// DerivedTaskID is the task ID of queue entry q under key (the entry's
// place: host, rank and order) in partition p, for an Issue without one: a
// hash of the partition, the key, the URL and the attempt. The same entry
// popped again gets the same ID; a different URL never does (but for a
// 64-bit collision), so a message ID JetStream drops as a duplicate is
// always a fetch of the same URL.
func DerivedTaskID(p int, key []byte, q Queued) string {
	d := xxhash.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(p))
	_, _ = d.Write(b[:])
	binary.BigEndian.PutUint64(b[:], uint64(len(key)))
	_, _ = d.Write(b[:])
	_, _ = d.Write(key)
	_, _ = d.WriteString(q.Link.URL)
	binary.BigEndian.PutUint64(b[:], uint64(q.Attempt))
	_, _ = d.Write(b[:])
	return fmt.Sprintf("p%d-%016x", p, d.Sum64())
}

// newInFlight builds the task issued for queued URL q.
func newInFlight(p int, q Queued, r Issue) InFlight {
	return InFlight{
		Task: messages.FetchTask{
			V:         messages.Version,
			ID:        r.TaskID,
			Partition: p,
			Host:      r.Host,
			URL:       q.Link.URL,
			Depth:     q.Link.Depth,
			Hops:      q.Link.Hops,
			Score:     q.Link.Score,
			Attempt:   q.Attempt,
			IssuedAt:  r.IssuedAt,
			Deadline:  r.Deadline,
			NotBefore: r.NotBefore,
		},
		LeaseUntil: r.LeaseUntil,
	}
}

// retry is the queue entry that re-issues an expired task's URL.
func retry(in InFlight) Queued {
	t := in.Task
	return Queued{
		Host:    t.Host,
		Link:    messages.Link{URL: t.URL, Depth: t.Depth, Hops: t.Hops, Score: t.Score},
		Attempt: t.Attempt + 1,
	}
}

func decodeInFlight(data []byte) (InFlight, error) {
	var in InFlight
	err := json.Unmarshal(data, &in)
	return in, err
}

// grant is TakeBudget's rule: unlimited when max <= 0, else what is left.
func grant(n, max int, issued uint64) int {
	if n <= 0 {
		return 0
	}
	if max <= 0 {
		return n
	}
	if issued >= uint64(max) {
		return 0
	}
	return int(min(uint64(n), uint64(max)-issued))
}

func sortedHosts(m map[string]*HostState) []HostState {
	out := make([]HostState, 0, len(m))
	for _, h := range m {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b HostState) int { return strings.Compare(a.Host, b.Host) })
	return out
}
