package store

// The embedded store's seen set: Seen, Record, Count and Scan over a
// partition's seen bucket.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

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
