package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Redis seen set of a partition is a set of buckets, each one Redis
// string holding a sorted array of 8-byte big-endian fingerprints, plus a
// hash with the layout version, the bucket geometry and the count:
//
//	<base>:seen          hash format, depth, split, count
//	<base>:seen:<d>:<i>  string: the fingerprints whose top d bits are i
//
// Buckets are addressed by linear hashing on the top bits: with geometry
// (depth d, split s) a fingerprint whose top d bits are i lives in bucket
// (d, i) if i >= s, else in bucket (d+1, its top d+1 bits). When the count
// exceeds seenBucketFill per bucket, bucket (d, s) is split in two by the
// next bit and s moves on (d grows when s reaches 2^d). So buckets hold
// about seenBucketFill fingerprints whatever the partition's size: the fixed
// cost of a key (~150 bytes) is spread over enough fingerprints to keep
// under 10 bytes per URL, and a bucket stays small enough to be copied into
// Lua and rewritten on every insertion (the cost of both grows with its
// size). docs/store.md has the measurements behind this design.
// Address order is numeric order, so Scan streams ascending fingerprints.
//
// Membership is a binary search and insertion a one-pass merge, both in Lua
// scripts: one script call per batch (up to seenChunk fingerprints), never a
// round trip per URL. All keys of a call, including those of the splits it
// may do, are computed by the caller from its copy of the geometry and
// passed in KEYS (they share the partition's hash tag: Redis Cluster rule);
// the script checks the geometry first and, if it moved, answers SEENSTALE
// with the current one and the caller retries.
//
// A partition stored in another layout (format 1 was one Redis set of
// fingerprints) is refused with ErrSeenFormat instead of being misread.
const (
	// seenFormat is the layout version, stored in the seen hash.
	seenFormat = "2"
	// seenBucketFill is the average number of fingerprints per bucket above
	// which Record splits: a bucket holds fill to 2*fill fingerprints before
	// its split, fill/2 to fill after (0.5 to 2 KB for 128). It is not part
	// of the layout: another value only changes when future splits happen.
	seenBucketFill = 128
)

// seenChunk bounds the fingerprints of one script call; a larger batch is
// several calls in one pipeline, each atomic. A dedup batch is far below it.
const seenChunk = 4096

// scanBuckets is how many bucket GETs Scan pipelines per round trip.
const scanBuckets = 1024

// maxSeenAttempts bounds the rounds after SEENSTALE that make no progress:
// the geometry only moves when a Record of the same partition splits, and
// one owner at a time records into a partition.
const maxSeenAttempts = 8

// A Record declares len(batch)/seenBucketFill + seenSplitSlack split slots,
// at most maxSplits: splits keep up with insertions, and catch up when they
// lagged (after a batch above maxSplits*seenBucketFill fingerprints).
const (
	seenSplitSlack = 4
	maxSplits      = 2048
)

// seenGeom is a partition's bucket geometry: depth d and split pointer s.
type seenGeom struct{ depth, split int }

// bucket returns the address (depth, index) of fingerprint fp's bucket.
func (g seenGeom) bucket(fp uint64) (int, uint64) {
	if i := top(fp, g.depth); i >= uint64(g.split) {
		return g.depth, i
	}
	return g.depth + 1, top(fp, g.depth+1)
}

// next returns the geometry after one split.
func (g seenGeom) next() seenGeom {
	g.split++
	if g.split == 1<<g.depth {
		g.depth, g.split = g.depth+1, 0
	}
	return g
}

// buckets returns the number of buckets.
func (g seenGeom) buckets() int { return 1<<g.depth + g.split }

// top returns the top d bits of fp (0 for d = 0).
func top(fp uint64, d int) uint64 { return fp >> (64 - d) }

func (r *Redis) seenMetaKey(p int) string { return r.base(p) + ":seen" }

func seenBucketKey(base string, depth int, i uint64) string {
	return base + ":seen:" + strconv.Itoa(depth) + ":" + strconv.FormatUint(i, 10)
}

// geom returns the cached geometry of partition p ({0, 0} when unknown: a
// stale guess costs one SEENSTALE answer).
func (r *Redis) geom(p int) seenGeom {
	if g, ok := r.geoms.Load(p); ok {
		return g.(seenGeom)
	}
	return seenGeom{}
}

// Seen runs the membership script on the batch's distinct fingerprints.
func (r *Redis) Seen(ctx context.Context, p int, fps []uint64) ([]bool, error) {
	if err := r.check(ctx, p); err != nil {
		return nil, err
	}
	out := make([]bool, len(fps))
	if len(fps) == 0 {
		return out, nil
	}
	uniq := sortedDistinct(fps)
	found := make([]bool, len(uniq))
	err := r.seenRun(ctx, p, "seen", seenScript, uniq, func(c seenCall, reply any) error {
		res, _ := reply.(string)
		if len(res) != c.hi-c.lo {
			return fmt.Errorf("store: seen in %s: %d answers for %d fingerprints", r.base(p), len(res), c.hi-c.lo)
		}
		for j := range len(res) {
			found[c.lo+j] = res[j] == '1'
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, fp := range fps {
		k, _ := slices.BinarySearch(uniq, fp)
		out[i] = found[k]
	}
	return out, nil
}

// Record merges the batch's distinct fingerprints into their buckets.
func (r *Redis) Record(ctx context.Context, p int, fps []uint64) error {
	if err := r.check(ctx, p); err != nil {
		return err
	}
	if len(fps) == 0 {
		return nil
	}
	return r.seenRun(ctx, p, "record", recordScript, sortedDistinct(fps), func(_ seenCall, reply any) error {
		if v, _ := reply.([]any); len(v) == 3 {
			d, ok1 := v[1].(int64)
			s, ok2 := v[2].(int64)
			if ok1 && ok2 {
				r.geoms.Store(p, seenGeom{int(d), int(s)})
				return nil
			}
		}
		return fmt.Errorf("store: record in %s: bad script reply %v", r.base(p), reply)
	})
}

// seenState is what the seen hash says.
type seenState struct {
	geom  seenGeom
	count int64
}

// seenState checks partition p's seen-set format and reads its geometry and
// count (zero for a partition that never recorded).
func (r *Redis) seenState(ctx context.Context, p int) (seenState, error) {
	meta := r.seenMetaKey(p)
	v, err := r.c.HMGet(ctx, meta, "format", "depth", "split", "count").Result()
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		typ, err := r.c.Type(ctx, meta).Result()
		if err != nil {
			return seenState{}, redisErr(err)
		}
		return seenState{}, r.formatErr(p, meta+" is a Redis "+typ)
	}
	if err != nil {
		return seenState{}, redisErr(err)
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	if str(0) == "" {
		return seenState{}, nil
	}
	if str(0) != seenFormat {
		return seenState{}, r.formatErr(p, meta+" has format "+str(0))
	}
	var st seenState
	if st.geom, err = parseGeom("SEENSTALE " + str(1) + " " + str(2)); err != nil {
		return seenState{}, fmt.Errorf("store: %s: %w", meta, err)
	}
	if c := str(3); c != "" {
		if st.count, err = strconv.ParseInt(c, 10, 64); err != nil {
			return seenState{}, fmt.Errorf("store: corrupt counter in %s: %w", meta, err)
		}
	}
	r.geoms.Store(p, st.geom)
	return st, nil
}

// Count reads the counter the record script keeps.
func (r *Redis) Count(ctx context.Context, p int) (int64, error) {
	if err := r.check(ctx, p); err != nil {
		return 0, err
	}
	st, err := r.seenState(ctx, p)
	return st.count, err
}

// Scan GETs the buckets in address order, scanBuckets per pipeline; each is
// sorted and address order is numeric order, so the stream is ascending.
func (r *Redis) Scan(ctx context.Context, p int, fn func(fps []uint64) error) error {
	if err := r.check(ctx, p); err != nil {
		return err
	}
	st, err := r.seenState(ctx, p)
	if err != nil || st.count == 0 {
		return err
	}
	base, g := r.base(p), st.geom
	var keys []string
	for i := range uint64(1) << g.depth {
		if i < uint64(g.split) {
			keys = append(keys, seenBucketKey(base, g.depth+1, 2*i), seenBucketKey(base, g.depth+1, 2*i+1))
		} else {
			keys = append(keys, seenBucketKey(base, g.depth, i))
		}
	}
	chunk := make([]uint64, 0, scanChunk)
	cmds := make([]*redis.StringCmd, 0, scanBuckets)
	for k0 := 0; k0 < len(keys); k0 += scanBuckets {
		cmds = cmds[:0]
		err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, k := range keys[k0:min(k0+scanBuckets, len(keys))] {
				cmds = append(cmds, pipe.Get(ctx, k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, c := range cmds {
			v, err := c.Bytes()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return redisErr(err)
			}
			if len(v)%8 != 0 {
				return fmt.Errorf("store: corrupt seen bucket %s: %d bytes", keys[k0+i], len(v))
			}
			for o := 0; o < len(v); o += 8 {
				chunk = append(chunk, binary.BigEndian.Uint64(v[o:]))
				if len(chunk) == scanChunk {
					if err := fn(chunk); err != nil {
						return err
					}
					chunk = make([]uint64, 0, scanChunk)
				}
			}
		}
	}
	if len(chunk) > 0 {
		return fn(chunk)
	}
	return nil
}

// seenErr turns a script's SEENFORMAT reply into ErrSeenFormat.
func (r *Redis) seenErr(p int, op string, err error) error {
	if redis.HasErrorPrefix(err, "SEENFORMAT ") {
		msg := err.Error()
		return r.formatErr(p, msg[strings.Index(msg, "SEENFORMAT ")+len("SEENFORMAT "):])
	}
	return fmt.Errorf("store: %s in %s: %w", op, r.base(p), redisErr(err))
}

func (r *Redis) formatErr(p int, found string) error {
	return fmt.Errorf("%w: partition %d: %s, but this build reads format %s; "+
		"the layout is part of a crawl's stored state: start a new crawl (another --prefix) or delete that partition's seen keys",
		ErrSeenFormat, p, found, seenFormat)
}
