package store

// The Lua of the Redis seen set (see redis_seen.go for the layout): the
// shared prelude (seenLua), the membership script and the insert-and-split
// script.

import "github.com/redis/go-redis/v9"

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
