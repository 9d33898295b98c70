package store

import (
	"context"
	"encoding/binary"
	"strconv"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"
)

// The intake log: which stream sequences a frontier partition has applied.
// JetStream redelivers a message that was never acked — after a crash, or
// when it was pulled by a consumer that stopped — possibly after newer ones,
// so "everything up to the highest sequence applied" would skip messages
// that were never applied. The log keeps each applied sequence until the
// consumer's ack floor passes it (then it can never come back).

func appliedBucket(p int) []byte { return []byte("applied/" + strconv.Itoa(p)) }

// Applied reports which of seqs partition p has marked applied.
func (b *Bolt) Applied(ctx context.Context, p int, seqs []uint64) ([]bool, error) {
	if err := checkArgs(ctx, p); err != nil {
		return nil, err
	}
	out := make([]bool, len(seqs))
	err := b.view(func(tx *bolt.Tx) error {
		bk := tx.Bucket(appliedBucket(p))
		if bk == nil {
			return nil
		}
		var k [8]byte
		for i, s := range seqs {
			binary.BigEndian.PutUint64(k[:], s)
			out[i] = bk.Get(k[:]) != nil
		}
		return nil
	})
	return out, err
}

// MarkApplied records seqs and forgets sequences at or below floor.
func (b *Bolt) MarkApplied(ctx context.Context, p int, seqs []uint64, floor uint64) error {
	if err := checkArgs(ctx, p); err != nil {
		return err
	}
	return b.update(func(tx *bolt.Tx) error { return markAppliedTx(tx, p, seqs, floor) })
}

// LastApplied is the highest sequence in partition p's intake log.
func (b *Bolt) LastApplied(ctx context.Context, p int) (uint64, error) {
	if err := checkArgs(ctx, p); err != nil {
		return 0, err
	}
	var last uint64
	err := b.view(func(tx *bolt.Tx) error {
		if bk := tx.Bucket(appliedBucket(p)); bk != nil {
			if k, _ := bk.Cursor().Last(); len(k) == 8 {
				last = binary.BigEndian.Uint64(k)
			}
		}
		return nil
	})
	return last, err
}

// markAppliedTx is MarkApplied within tx.
func markAppliedTx(tx *bolt.Tx, p int, seqs []uint64, floor uint64) error {
	bk, err := tx.CreateBucketIfNotExists(appliedBucket(p))
	if err != nil {
		return err
	}
	var k [8]byte
	for _, s := range seqs {
		binary.BigEndian.PutUint64(k[:], s)
		if err := bk.Put(append([]byte(nil), k[:]...), []byte{}); err != nil {
			return err
		}
	}
	if floor == 0 {
		return nil
	}
	c := bk.Cursor()
	for key, _ := c.First(); key != nil && binary.BigEndian.Uint64(key) <= floor; key, _ = c.First() {
		if err := bk.Delete(key); err != nil {
			return err
		}
	}
	return nil
}

func (r *Redis) appliedKey(p int) string { return r.base(p) + ":applied" }

// Applied reports which of seqs partition p has marked applied.
func (r *Redis) Applied(ctx context.Context, p int, seqs []uint64) ([]bool, error) {
	if err := checkArgs(ctx, p); err != nil {
		return nil, err
	}
	out := make([]bool, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	members := make([]string, len(seqs))
	for i, s := range seqs {
		members[i] = strconv.FormatUint(s, 10)
	}
	scores, err := r.c.ZMScore(ctx, r.appliedKey(p), members...).Result()
	if err != nil {
		return nil, redisErr(err)
	}
	// go-redis reports a missing member as score 0; sequences are >= 1.
	for i, sc := range scores {
		out[i] = sc != 0
	}
	return out, nil
}

// MarkApplied records seqs and forgets sequences at or below floor.
func (r *Redis) MarkApplied(ctx context.Context, p int, seqs []uint64, floor uint64) error {
	if err := checkArgs(ctx, p); err != nil {
		return err
	}
	key := r.appliedKey(p)
	_, err := r.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		if len(seqs) > 0 {
			zs := make([]redis.Z, len(seqs))
			for i, s := range seqs {
				zs[i] = redis.Z{Score: float64(s), Member: strconv.FormatUint(s, 10)}
			}
			pipe.ZAdd(ctx, key, zs...)
		}
		if floor > 0 {
			pipe.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatUint(floor, 10))
		}
		return nil
	})
	return redisErr(err)
}

// LastApplied is the highest sequence in partition p's intake log (the
// sorted set's scores are the sequences).
func (r *Redis) LastApplied(ctx context.Context, p int) (uint64, error) {
	if err := checkArgs(ctx, p); err != nil {
		return 0, err
	}
	top, err := r.c.ZRangeWithScores(ctx, r.appliedKey(p), -1, -1).Result()
	if err != nil {
		return 0, redisErr(err)
	}
	if len(top) == 0 {
		return 0, nil
	}
	return uint64(top[0].Score), nil
}
