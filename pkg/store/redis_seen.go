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

// The Redis seen set of a partition is seenBuckets strings, bucket b holding
// the sorted array of the partition's 8-byte big-endian fingerprints whose top
// seenBucketBits bits are b, plus one hash with the layout and the count:
//
//	<base>:seen        hash format, buckets, count
//	<base>:seen:<b>    string, b as 4 hex digits (0000..ffff)
//
// About 8 bytes per URL plus the allocator's rounding of each string and a
// fixed cost per key (docs/store.md has the measurement). Membership is a
// binary search and insertion a one-pass merge, both inside Lua scripts: one
// script call per batch (up to seenChunk fingerprints), never a round trip per
// URL, and all keys of a call share the partition's hash tag.
//
// The bucket count is part of the stored format: a partition written with
// another one (or in the old layout, a Redis set) is refused with
// ErrSeenFormat instead of being misread.
const (
	// seenFormat is the layout version (1 was a Redis set of fingerprints).
	seenFormat = "2"
	// seenBucketBits is log2 of seenBuckets: 65536 buckets keep a bucket
	// around 4 KB at 30M fingerprints per partition (1e9 URLs over 32
	// partitions) and 1.2 KB at 10M; see docs/store.md.
	seenBucketBits = 16
	seenBuckets    = 1 << seenBucketBits
)

// seenChunk bounds the fingerprints of one script call; a larger batch is
// several calls in one pipeline (one round trip), each atomic. A dedup batch
// is far below it.
const seenChunk = 4096

// scanBuckets is how many bucket GETs Scan pipelines per round trip.
const scanBuckets = 1024

func seenBucket(fp uint64) int { return int(fp >> (64 - seenBucketBits)) }

func (r *Redis) seenMetaKey(p int) string { return r.base(p) + ":seen" }

// seenBucketKey is <base>:seen:<b> with b in fixed-width lowercase hex.
func seenBucketKey(base string, b int) string {
	const digits = "0123456789abcdef"
	var buf [(seenBucketBits + 3) / 4]byte
	for i := len(buf) - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	return base + ":seen:" + string(buf[:])
}

// seenLua is shared by both scripts. KEYS[1] is the partition's seen hash,
// KEYS[1+i] bucket i of the call; ARGV[1] and ARGV[2] the expected format and
// bucket count, ARGV[2+i] bucket i's queried fingerprints: distinct, sorted,
// 8 bytes each, big-endian.
//
// Fingerprints are compared as two 32-bit halves, which doubles hold
// exactly. Not as 64-bit numbers (doubles round them), and not with Lua's
// string "<" either: Lua 5.1 compares strings with strcoll, and Redis calls
// setlocale(LC_COLLATE, ""), so a server started under a UTF-8 locale would
// not order binary strings bytewise.
const seenLua = `
local byte, sub, floor = string.byte, string.sub, math.floor

local function u32(s, i)
  local a, b, c, d = byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- first entry (0-based) in [lo, n) of the sorted array s not below (h, l)
local function lower(s, lo, n, h, l)
  local hi = n
  while lo < hi do
    local m = floor((lo + hi) / 2)
    local o = 8 * m + 1
    local mh = u32(s, o)
    if mh < h or (mh == h and u32(s, o + 4) < l) then lo = m + 1 else hi = m end
  end
  return lo
end

local function at(s, m, n, h, l)
  if m >= n then return false end
  local o = 8 * m + 1
  return u32(s, o) == h and u32(s, o + 4) == l
end

-- nil when the partition's layout is ours (or new: then write declares it)
local function badformat(write)
  local f = redis.pcall('HMGET', KEYS[1], 'format', 'buckets')
  if f.err then
    return redis.error_reply('SEENFORMAT ' .. KEYS[1] .. ' is a Redis ' .. redis.call('TYPE', KEYS[1]).ok)
  end
  if not f[1] then
    if write then redis.call('HSET', KEYS[1], 'format', ARGV[1], 'buckets', ARGV[2]) end
    return nil
  end
  if f[1] ~= ARGV[1] or f[2] ~= ARGV[2] then
    return redis.error_reply('SEENFORMAT ' .. KEYS[1] .. ' has format ' .. tostring(f[1]) ..
      ' with ' .. tostring(f[2]) .. ' buckets')
  end
  return nil
end

local function bucket(i)
  local s = redis.call('GET', KEYS[i]) or ''
  if #s % 8 ~= 0 then
    return nil, redis.error_reply('ERR corrupt seen bucket ' .. KEYS[i] .. ': ' .. #s .. ' bytes')
  end
  return s
end
`

// seenScript returns one byte per queried fingerprint, '1' if present, in
// the order of the call's arguments.
var seenScript = redis.NewScript(seenLua + `
local bad = badformat(false)
if bad then return bad end
local out, k = {}, 0
for i = 2, #KEYS do
  local s, err = bucket(i)
  if err then return err end
  local q = ARGV[i + 1]
  local n, m = #s / 8, 0
  for j = 1, #q, 8 do
    local h, l = u32(q, j), u32(q, j + 4)
    m = lower(s, m, n, h, l)
    k = k + 1
    if at(s, m, n, h, l) then out[k] = '1' else out[k] = '0' end
  end
end
return table.concat(out)
`)

// recordScript merges each bucket's new fingerprints into it in one pass
// and SETs it back (an exact-size string: SETRANGE/APPEND would leave
// preallocated slack). Buckets are all read and checked before anything is
// written. Returns the number of fingerprints added, also added to count.
var recordScript = redis.NewScript(seenLua + `
local bad = badformat(true)
if bad then return bad end
local olds = {}
for i = 2, #KEYS do
  local s, err = bucket(i)
  if err then return err end
  olds[i] = s
end
local added = 0
for i = 2, #KEYS do
  local s, q = olds[i], ARGV[i + 1]
  local n, m, from = #s / 8, 0, 1
  local parts, np = {}, 0
  for j = 1, #q, 8 do
    local h, l = u32(q, j), u32(q, j + 4)
    m = lower(s, m, n, h, l)
    if not at(s, m, n, h, l) then
      local o = 8 * m + 1
      parts[np + 1] = sub(s, from, o - 1)
      parts[np + 2] = sub(q, j, j + 7)
      np = np + 2
      from = o
    end
  end
  if np > 0 then
    parts[np + 1] = sub(s, from)
    redis.call('SET', KEYS[i], table.concat(parts))
    added = added + np / 2
  end
end
if added > 0 then redis.call('HINCRBY', KEYS[1], 'count', added) end
return added
`)

// seenCall is one script call: the seen hash and bucket keys, and the
// format, bucket count and per-bucket fingerprint strings.
type seenCall struct {
	keys []string
	args []any
	n    int // fingerprints in the call
}

// seenCalls groups sorted distinct fingerprints by bucket into calls of at
// most seenChunk fingerprints (a bucket may straddle two calls).
func (r *Redis) seenCalls(p int, uniq []uint64) []seenCall {
	base, meta := r.base(p), r.seenMetaKey(p)
	buf := make([]byte, 8*len(uniq))
	for i, fp := range uniq {
		binary.BigEndian.PutUint64(buf[8*i:], fp)
	}
	var calls []seenCall
	for i := 0; i < len(uniq); {
		if len(calls) == 0 || calls[len(calls)-1].n == seenChunk {
			calls = append(calls, seenCall{
				keys: []string{meta},
				args: []any{seenFormat, seenBuckets},
			})
		}
		c := &calls[len(calls)-1]
		b := seenBucket(uniq[i])
		j := i + 1
		for j < len(uniq) && seenBucket(uniq[j]) == b && c.n+j-i < seenChunk {
			j++
		}
		c.keys = append(c.keys, seenBucketKey(base, b))
		c.args = append(c.args, buf[8*i:8*j])
		c.n += j - i
		i = j
	}
	return calls
}

// runSeen runs script once per call: a lone call with Run (EVALSHA, EVAL
// if the script is not cached), several in one pipeline of EVALSHAs, then
// any NOSCRIPT one again with Run. Replaying a call is harmless: a NOSCRIPT
// call did nothing, and both scripts are idempotent anyway.
func (r *Redis) runSeen(ctx context.Context, script *redis.Script, calls []seenCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 {
		cmds[0] = script.Run(ctx, r.c, calls[0].keys, calls[0].args...)
		return cmds
	}
	// Errors are per command; they are checked by the caller.
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
	calls := r.seenCalls(p, uniq)
	found := make([]bool, 0, len(uniq))
	for i, c := range r.runSeen(ctx, seenScript, calls) {
		res, err := c.Text()
		if err != nil {
			return nil, r.seenErr(p, "seen", err)
		}
		if len(res) != calls[i].n {
			return nil, fmt.Errorf("store: seen in %s: %d answers for %d fingerprints", r.base(p), len(res), calls[i].n)
		}
		for j := range len(res) {
			found = append(found, res[j] == '1')
		}
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
	for _, c := range r.runSeen(ctx, recordScript, r.seenCalls(p, sortedDistinct(fps))) {
		if err := c.Err(); err != nil {
			return r.seenErr(p, "record", err)
		}
	}
	return nil
}

// Count reads the counter the record script keeps.
func (r *Redis) Count(ctx context.Context, p int) (int64, error) {
	if err := r.check(ctx, p); err != nil {
		return 0, err
	}
	return r.seenCount(ctx, p)
}

// seenCount checks partition p's seen-set format and returns its count.
func (r *Redis) seenCount(ctx context.Context, p int) (int64, error) {
	meta := r.seenMetaKey(p)
	v, err := r.c.HMGet(ctx, meta, "format", "buckets", "count").Result()
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		typ, err := r.c.Type(ctx, meta).Result()
		if err != nil {
			return 0, redisErr(err)
		}
		return 0, r.formatErr(p, meta+" is a Redis "+typ)
	}
	if err != nil {
		return 0, redisErr(err)
	}
	format, _ := v[0].(string)
	buckets, _ := v[1].(string)
	count, _ := v[2].(string)
	if format == "" {
		return 0, nil // never recorded
	}
	if format != seenFormat || buckets != strconv.Itoa(seenBuckets) {
		return 0, r.formatErr(p, fmt.Sprintf("%s has format %s with %s buckets", meta, format, buckets))
	}
	if count == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: corrupt counter in %s: %w", meta, err)
	}
	return n, nil
}

// Scan GETs the buckets in order, scanBuckets per pipeline; buckets are
// sorted and ordered by their top bits, so the stream is ascending.
func (r *Redis) Scan(ctx context.Context, p int, fn func(fps []uint64) error) error {
	if err := r.check(ctx, p); err != nil {
		return err
	}
	n, err := r.seenCount(ctx, p)
	if err != nil || n == 0 {
		return err
	}
	base := r.base(p)
	chunk := make([]uint64, 0, scanChunk)
	cmds := make([]*redis.StringCmd, 0, scanBuckets)
	for b0 := 0; b0 < seenBuckets; b0 += scanBuckets {
		cmds = cmds[:0]
		err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
			for b := b0; b < min(b0+scanBuckets, seenBuckets); b++ {
				cmds = append(cmds, pipe.Get(ctx, seenBucketKey(base, b)))
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
				return fmt.Errorf("store: corrupt seen bucket %s: %d bytes", seenBucketKey(base, b0+i), len(v))
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
	return fmt.Errorf("%w: partition %d: %s, but this build reads format %s with %d buckets; "+
		"the layout is part of a crawl's stored state: start a new crawl (another --prefix) or delete that partition's seen keys",
		ErrSeenFormat, p, found, seenFormat, seenBuckets)
}
