package store

// The embedded store's tasks in flight: Expire (a lease that ran out) and
// Load (the hosts, tasks in flight and politeness times a partition's new
// owner picks up).

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
			data, err := marshal(retry(in))
			if err != nil {
				return err
			}
			head := getU64Or(meta, metaHead, orderStart) - 1
			if _, err := addQueueCount(part, host, 1); err != nil {
				return err
			}
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
	// A partition never written has nothing to load: a read says so without
	// a commit (a new crawl's 32 partitions paid 16 commits in turn before
	// the first task could go out). Only the frontier partition itself
	// writes its state, after its load.
	var exists bool
	if err := b.view(func(tx *bolt.Tx) error { exists = readPart(tx, p) != nil; return nil }); err != nil {
		return PartitionState{}, err
	}
	if !exists {
		return PartitionState{}, nil
	}
	var st PartitionState
	now := time.Now()
	err := b.updateNow(func(tx *bolt.Tx) error {
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
