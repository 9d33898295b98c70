package store

// The embedded store's host queues: Apply (an intake batch of new URLs and
// finished tasks), Pop (issuing each host's head URL) and the queue key
// layout with its range helpers.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	bolt "go.etcd.io/bbolt"
)

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
// appliedSeq is the apply number of partition p's last applied batch.
func appliedSeq(tx *bolt.Tx, p int) uint64 {
	if old := readPart(tx, p); old != nil {
		return getU64(old.Bucket(bucketMeta), metaApplied)
	}
	return 0
}

func (b *Bolt) applyTx(tx *bolt.Tx, p int, seq uint64, items []encodedQueued, done []Done) (bool, error) {
	last := appliedSeq(tx, p)
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
		n, err := addQueueCount(part, it.host, 1)
		if err != nil {
			return false, err
		}
		if err := queue.Put(queueKey(it.host, it.rank, tail), it.data); err != nil {
			return false, err
		}
		tail++
		added++
		if b.limits.HostQueue > 0 && n > uint64(b.limits.HostQueue) {
			if _, err := addQueueCount(part, it.host, -1); err != nil {
				return false, err
			}
			if err := queue.Delete(queueTail(queue, it.host)); err != nil {
				return false, err
			}
			added--
			dropped++
			queueDropped++
		}
	}
	freed, scheduled := int64(0), uint64(0)
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
		if d.Revisit != nil {
			added, err := scheduleTx(part, *d.Revisit)
			if err != nil {
				return false, err
			}
			if added {
				scheduled++
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
		kv{metaScheduled, getU64(meta, metaScheduled) + scheduled},
	)
}

// promoteTx moves due revisits from the schedule into their hosts' queues,
// outside the host limits; see StepRequest.Promote.
func promoteTx(tx *bolt.Tx, p int, promote []Scheduled) error {
	if len(promote) == 0 {
		return nil
	}
	part, err := writePart(tx, p)
	if err != nil {
		return err
	}
	meta, queue := part.Bucket(bucketMeta), part.Bucket(bucketQueue)
	items, err := encodeQueued(scheduledQueued(promote))
	if err != nil {
		return err
	}
	tail := getU64Or(meta, metaTail, orderStart)
	moved := uint64(0)
	for i, it := range items {
		ok, err := unscheduleTx(part, promote[i].Queued.Link.URL)
		if err != nil {
			return err
		}
		if !ok {
			continue // moved by an earlier try of this step
		}
		if _, err := addQueueCount(part, it.host, 1); err != nil {
			return err
		}
		if err := queue.Put(queueKey(it.host, it.rank, tail), it.data); err != nil {
			return err
		}
		tail++
		moved++
	}
	return putMeta(meta,
		kv{metaTail, tail},
		kv{metaEnqueued, getU64(meta, metaEnqueued) + moved},
		kv{metaQueued, getU64(meta, metaQueued) + moved},
		kv{metaScheduled, getU64(meta, metaScheduled) - moved},
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
			d, err := dropQueue(part, r.Host)
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
		if err := unmarshal(val, &q); err != nil {
			return nil, fmt.Errorf("store: partition %d: corrupt queue entry of host %q (key %x): %w", p, r.Host, key, err)
		}
		if derived {
			r.TaskID = DerivedTaskID(p, key, q)
		}
		in := newInFlight(p, q, r)
		data, err := marshal(in)
		if err != nil {
			return nil, err
		}
		if _, err := addQueueCount(part, r.Host, -1); err != nil {
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
			// will take unless a URL ranked above it arrives first; and
			// the entry after it (Next.Then), when the budget allows
			// that pop too.
			var err error
			if in.Next, err = reservations(queue, p, r.Host, b.limits.HostBudget <= 0 || n+2 < uint64(b.limits.HostBudget)); err != nil {
				return nil, err
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

// reservations reads host's first queue entry, and the second as its Then
// when then is set (see Next).
func reservations(queue *bolt.Bucket, p int, host string, then bool) (*Next, error) {
	prefix := append([]byte(host), 0)
	c := queue.Cursor()
	var first, prev *Next
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+16; k, v = c.Next() {
		var q Queued
		if err := unmarshal(v, &q); err != nil {
			return nil, fmt.Errorf("store: partition %d: corrupt queue entry of host %q (key %x): %w", p, host, k, err)
		}
		n := &Next{Key: slices.Clone(k), TaskID: DerivedTaskID(p, k, q), Queued: q, Rank: binary.BigEndian.Uint64(k[len(k)-16:])}
		if first == nil {
			first = n
		} else {
			prev.Then = n
		}
		prev = n
		if !then || n != first {
			break
		}
	}
	return first, nil
}

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

// addQueueCount adds delta to host's count of queued URLs and returns the
// new count. Call it before the change to the queue itself: a host without a
// count yet (a file written before counts were kept) is counted by a scan,
// once, and that scan must not see the change. Empty hosts keep no entry.
func addQueueCount(part *bolt.Bucket, host string, delta int64) (uint64, error) {
	counts, err := part.CreateBucketIfNotExists(bucketQueueLen) // files written before it
	if err != nil {
		return 0, err
	}
	const unknown = math.MaxUint64
	n := int64(getU64Or(counts, host, unknown))
	if uint64(n) == unknown {
		n = int64(queueLen(part.Bucket(bucketQueue), host))
	}
	n = max(n+delta, 0)
	if n == 0 {
		return 0, counts.Delete([]byte(host))
	}
	return uint64(n), counts.Put([]byte(host), be64(uint64(n)))
}

// queueLen counts host's queued URLs by a scan of its range: for a host
// without a count yet (addQueueCount) and for tests.
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

// dropQueue deletes all of host's queued URLs, and their count, and returns
// how many.
func dropQueue(part *bolt.Bucket, host string) (int, error) {
	queue := part.Bucket(bucketQueue)
	prefix := append([]byte(host), 0)
	var keys [][]byte
	c := queue.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+16 {
			keys = append(keys, slices.Clone(k))
		}
	}
	if _, err := addQueueCount(part, host, -int64(len(keys))); err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := queue.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
