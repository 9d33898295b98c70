package store

// Running the seen set's scripts: a batch grouped by bucket into calls of at
// most seenChunk fingerprints, sent in one pipeline, and the calls answered
// SEENSTALE sent again under the geometry they report.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// seenCall is one script call over fingerprints uniq[lo:hi].
type seenCall struct {
	keys   []string
	args   []any
	lo, hi int
}

// seenCalls groups sorted distinct fingerprints by bucket under geometry g
// into calls of at most seenChunk fingerprints (a bucket may straddle two
// calls). With write, the last call declares the split slots for the whole
// batch (enough to keep up with what it adds, plus a few to catch up), so
// that all calls of one pipeline run under the same geometry.
func (r *Redis) seenCalls(p int, g seenGeom, uniq []uint64, write bool) []seenCall {
	base := r.base(p)
	head := func() seenCall {
		return seenCall{keys: []string{r.seenMetaKey(p)}, args: []any{seenFormat, g.depth, g.split, 0}}
	}
	var calls []seenCall
	for lo := 0; lo < len(uniq); {
		c := head()
		c.lo = lo
		var fill []any
		if write {
			c.args = append(c.args, seenBucketFill)
		}
		for i := lo; i < len(uniq) && i-lo < seenChunk; {
			d, b := g.bucket(uniq[i])
			j := i + 1
			for j < len(uniq) && j-lo < seenChunk {
				if d2, b2 := g.bucket(uniq[j]); d2 != d || b2 != b {
					break
				}
				j++
			}
			c.keys = append(c.keys, seenBucketKey(base, d, b))
			fill = append(fill, be64s(uniq[i:j]))
			i = j
			c.hi = j
		}
		c.args[3] = len(fill)
		c.args = append(c.args, fill...)
		if write && c.hi == len(uniq) {
			sg := g
			for range min(len(uniq)/seenBucketFill+seenSplitSlack, maxSplits) {
				d, s := sg.depth, uint64(sg.split)
				c.keys = append(c.keys, seenBucketKey(base, d, s), seenBucketKey(base, d+1, 2*s), seenBucketKey(base, d+1, 2*s+1))
				c.args = append(c.args, be64s([]uint64{(2*s + 1) << (63 - d)}))
				sg = sg.next()
			}
		}
		calls = append(calls, c)
		lo = c.hi
	}
	return calls
}

// be64s concatenates fingerprints as 8-byte big-endian strings.
func be64s(fps []uint64) []byte {
	out := make([]byte, 8*len(fps))
	for i, fp := range fps {
		binary.BigEndian.PutUint64(out[8*i:], fp)
	}
	return out
}

// runSeen runs script once per call: a lone call with Run (EVALSHA, EVAL
// if the script is not cached), several in one pipeline of EVALSHAs, then
// any NOSCRIPT one again with Run (such a call did nothing).
func (r *Redis) runSeen(ctx context.Context, script *redis.Script, calls []seenCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 {
		cmds[0] = script.Run(ctx, r.c, calls[0].keys, calls[0].args...)
		return cmds
	}
	// Errors are per command; the caller checks them.
	_, _ = r.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
		return nil
	})
	for i, c := range cmds {
		if err := c.Err(); errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmds[i] = script.Run(ctx, r.c, calls[i].keys, calls[i].args...)
		}
	}
	return cmds
}

// seenRun runs script over the sorted distinct fingerprints, retrying the
// calls answered SEENSTALE with the geometry they report, and passes each
// successful call's reply to done.
func (r *Redis) seenRun(ctx context.Context, p int, op string, script *redis.Script, uniq []uint64, done func(c seenCall, reply any) error) error {
	pending := [][2]int{{0, len(uniq)}} // index ranges of uniq still to do
	for stuck := 0; len(pending) > 0; {
		if stuck++; stuck > maxSeenAttempts {
			return fmt.Errorf("store: %s in %s: bucket geometry keeps moving (another writer?)", op, r.base(p))
		}
		g := r.geom(p)
		var calls []seenCall
		for _, rg := range pending {
			for _, c := range r.seenCalls(p, g, uniq[rg[0]:rg[1]], script == recordScript) {
				c.lo, c.hi = c.lo+rg[0], c.hi+rg[0]
				calls = append(calls, c)
			}
		}
		pending = pending[:0]
		for i, cmd := range r.runSeen(ctx, script, calls) {
			reply, err := cmd.Result()
			if redis.HasErrorPrefix(err, "SEENSTALE ") {
				ng, perr := parseGeom(err.Error())
				if perr != nil {
					return fmt.Errorf("store: %s in %s: %w", op, r.base(p), perr)
				}
				r.geoms.Store(p, ng)
				pending = append(pending, [2]int{calls[i].lo, calls[i].hi})
				continue
			}
			if err != nil {
				return r.seenErr(p, op, err)
			}
			if err := done(calls[i], reply); err != nil {
				return err
			}
			stuck = 0
		}
	}
	return nil
}

// parseGeom reads "SEENSTALE <depth> <split>".
func parseGeom(msg string) (seenGeom, error) {
	f := strings.Fields(msg[strings.Index(msg, "SEENSTALE "):])
	if len(f) == 3 {
		d, err1 := strconv.Atoi(f[1])
		s, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && d >= 0 && d < 64 && s >= 0 && s < 1<<d {
			return seenGeom{d, s}, nil
		}
	}
	return seenGeom{}, fmt.Errorf("corrupt seen geometry: %q", msg)
}
