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

// seenLua is shared by both scripts. KEYS[1] is the partition's seen hash;
// ARGV[1..3] are the format, depth and split the caller computed KEYS with,
// ARGV[4] the number nb of buckets the call queries, KEYS[1+i] bucket i, and
// its queried fingerprints (distinct, ascending, 8 bytes each) are ARGV[4+i]
// for seenScript, ARGV[5+i] for recordScript (ARGV[5] is the fill).
//
// Fingerprints are compared as two 32-bit halves, which doubles hold
// exactly: not as numbers (doubles round 64 bits), and not with Lua's string
// "<" either, which is strcoll: Redis calls setlocale(LC_COLLATE, ""), so
// under a UTF-8 locale binary strings would not sort bytewise.
const seenLua = `
local byte, sub = string.byte, string.sub

local function halves(s, o)
  local a, b, c, d, e, f, g, h = byte(s, o, o + 7)
  return ((a * 256 + b) * 256 + c) * 256 + d, ((e * 256 + f) * 256 + g) * 256 + h
end

-- first entry (0-based) in [lo, n) of the sorted bucket s not below (h, l)
local function lower(s, lo, n, h, l)
  local hi = n
  while lo < hi do
    local m = (lo + hi) / 2
    m = m - m % 1
    local mh, ml = halves(s, 8 * m + 1)
    if mh < h or (mh == h and ml < l) then lo = m + 1 else hi = m end
  end
  return lo
end

local function has(s, m, n, h, l)
  if m >= n then return false end
  local mh, ml = halves(s, 8 * m + 1)
  return mh == h and ml == l
end

-- nil if the layout is ours and the geometry the caller's; a write to a new
-- partition declares the layout
local function check(write)
  local f = redis.pcall('HMGET', KEYS[1], 'format', 'depth', 'split')
  if f.err then
    return redis.error_reply('SEENFORMAT ' .. KEYS[1] .. ' is a Redis ' .. redis.call('TYPE', KEYS[1]).ok)
  end
  if not f[1] then
    if ARGV[2] ~= '0' or ARGV[3] ~= '0' then return redis.error_reply('SEENSTALE 0 0') end
    if write then redis.call('HSET', KEYS[1], 'format', ARGV[1], 'depth', 0, 'split', 0) end
    return nil
  end
  if f[1] ~= ARGV[1] then
    return redis.error_reply('SEENFORMAT ' .. KEYS[1] .. ' has format ' .. f[1])
  end
  if f[2] ~= ARGV[2] or f[3] ~= ARGV[3] then
    return redis.error_reply('SEENSTALE ' .. tostring(f[2]) .. ' ' .. tostring(f[3]))
  end
  return nil
end

-- table.concat(t, '', 1, n) in groups: the Lua of miniredis (used by tests
-- without a Redis) overflows its registry on long tables
local function cat(t, n)
  if n <= 1000 then return table.concat(t, '', 1, n) end
  local g, k = {}, 0
  for i = 1, n, 1000 do
    k = k + 1
    g[k] = table.concat(t, '', i, math.min(i + 999, n))
  end
  return table.concat(g, '', 1, k)
end

-- the queried buckets, in one MGET (a redis.call costs microseconds)
local function buckets(nb)
  local got = redis.call('MGET', unpack(KEYS, 2, 1 + nb))
  for i = 1, nb do
    local s = got[i] or ''
    if #s % 8 ~= 0 then
      return nil, redis.error_reply('ERR corrupt seen bucket ' .. KEYS[1 + i] .. ': ' .. #s .. ' bytes')
    end
    got[i] = s
  end
  return got
end
`

// seenScript returns one byte per queried fingerprint, '1' if present, in
// the order of the call's arguments.
var seenScript = redis.NewScript(seenLua + `
local bad = check(false)
if bad then return bad end
local nb = tonumber(ARGV[4])
local got, err = buckets(nb)
if err then return err end
local out, k = {}, 0
for i = 1, nb do
  local s, q = got[i], ARGV[4 + i]
  local n, m = #s / 8, 0
  for j = 1, #q, 8 do
    local h, l = halves(q, j)
    m = lower(s, m, n, h, l)
    k = k + 1
    if has(s, m, n, h, l) then out[k] = '1' else out[k] = '0' end
  end
end
return cat(out, k)
`)

// recordScript merges each bucket's new fingerprints into it in one pass
// and writes it back with MSET: exact-size strings (SETRANGE and APPEND
// would leave preallocated slack). All buckets are read (one MGET) and
// checked before anything is written. Then it splits while the count is
// above ARGV[5] per bucket, using the split slots the caller declared:
// KEYS[2+nb+3(j-1) ..] = bucket (d, s) and its two halves, ARGV[5+nb+j] = the
// first fingerprint of the upper half. Returns {added, depth, split}.
var recordScript = redis.NewScript(seenLua + `
local bad = check(true)
if bad then return bad end
local nb, fill = tonumber(ARGV[4]), tonumber(ARGV[5])
local got, err = buckets(nb)
if err then return err end
local added, set, ns = 0, {}, 0
local function flush()
  if ns > 0 then redis.call('MSET', unpack(set, 1, ns)) end
  ns = 0
end
for i = 1, nb do
  local s, q = got[i], ARGV[5 + i]
  local n, m, from = #s / 8, 0, 1
  local parts, np = {}, 0
  for j = 1, #q, 8 do
    local h, l = halves(q, j)
    m = lower(s, m, n, h, l)
    if not has(s, m, n, h, l) then
      local o = 8 * m + 1
      parts[np + 1] = sub(s, from, o - 1)
      parts[np + 2] = sub(q, j, j + 7)
      np = np + 2
      from = o
    end
  end
  if np > 0 then
    parts[np + 1] = sub(s, from)
    set[ns + 1], set[ns + 2] = KEYS[1 + i], cat(parts, np + 1)
    ns = ns + 2
    added = added + np / 2
    if ns >= 2000 then flush() end -- unpack's stack limit is 8000
  end
end
flush()
local count
if added > 0 then
  count = redis.call('HINCRBY', KEYS[1], 'count', added)
else
  count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
end
local depth, split = tonumber(ARGV[2]), tonumber(ARGV[3])
local k0, a0 = 1 + nb, 5 + nb
for j = 1, (#KEYS - k0) / 3 do
  if count <= fill * (2 ^ depth + split) then break end
  local kb = k0 + 3 * (j - 1)
  local s = redis.call('GET', KEYS[kb + 1]) or ''
  local n = #s / 8
  local h, l = halves(ARGV[a0 + j], 1)
  local m = lower(s, 0, n, h, l)
  if m > 0 then redis.call('SET', KEYS[kb + 2], sub(s, 1, 8 * m)) end
  if m < n then redis.call('SET', KEYS[kb + 3], sub(s, 8 * m + 1)) end
  redis.call('DEL', KEYS[kb + 1])
  split = split + 1
  if split == 2 ^ depth then depth, split = depth + 1, 0 end
end
if depth ~= tonumber(ARGV[2]) or split ~= tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'depth', depth, 'split', split)
end
return {added, depth, split}
`)

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
