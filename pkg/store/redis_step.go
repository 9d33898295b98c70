package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// stepScript is a frontier step's first half on Redis: the intake batch
// (as applyScript), its stream sequences marked in the intake log (as
// MarkApplied) and the head member of each host due, all in one call. The
// pop (popScript) is the second call: Go builds the in-flight entries from
// the heads read here, after this batch's URLs were queued.
//
// A done frees its host when the host's in-flight entry is the task named:
// Go writes entries starting with inFlightPrefix(task ID), which the script
// compares; any other entry is decoded (cjson) and its task ID compared. Every
// in-flight entry is read and checked before anything is written, so a corrupt
// one fails the call with nothing changed.
//
// KEYS = meta, hosts, inflight, rest, issued, applied, q:<host_1..H>;
// ARGV = seq, host budget, queue cap, H, host_1..H,
// E, E x (host index, rank hex, JSON Queued),
// D, D x (host index, in-flight prefix, task ID, NotBefore ms or ""),
// M, M x stream sequence, floor ("0": keep),
// I, I x host index (the hosts due).
// Returns 0 (the batch was applied before: nothing changed) or
// {1, head_1..head_I} ("" for an empty queue).
var stepScript = redis.NewScript(`
local function above(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local applied = redis.call('HGET', KEYS[1], 'applied') or '0'
if not above(ARGV[1], applied) then return 0 end
local budget, qcap = tonumber(ARGV[2]), tonumber(ARGV[3])
local h = tonumber(ARGV[4])
local hosts = {}
for i = 1, h do hosts[i] = ARGV[4 + i] end
local a = 5 + h
local e = tonumber(ARGV[a]); a = a + 1
local ea = a
a = a + 3 * e
local d = tonumber(ARGV[a]); a = a + 1
local frees, freeing = {}, {}
for _ = 1, d do
  local i = tonumber(ARGV[a])
  local v = not freeing[i] and redis.call('HGET', KEYS[3], hosts[i])
  if v then
    local pre = ARGV[a + 1]
    local match = string.sub(v, 1, #pre) == pre
    if not match then
      local ok, t = pcall(cjson.decode, v)
      if not ok or type(t) ~= 'table' or type(t.task) ~= 'table' then
        return redis.error_reply('corrupt in-flight entry ' .. hosts[i])
      end
      match = t.task.id == ARGV[a + 2]
    end
    if match then
      frees[#frees + 1] = {i, ARGV[a + 3]}
      freeing[i] = true
    end
  end
  a = a + 4
end
local m = tonumber(ARGV[a]); a = a + 1
local ma = a
a = a + m
local floor = ARGV[a]; a = a + 1
local n = tonumber(ARGV[a]); a = a + 1

local added, dropped, qdropped = 0, 0, 0
for k = 0, e - 1 do
  local b = ea + 3 * k
  local i = tonumber(ARGV[b])
  local q = KEYS[6 + i]
  if budget > 0 and tonumber(redis.call('HGET', KEYS[5], hosts[i]) or '0') >= budget then
    dropped = dropped + 1
  else
    local order = redis.call('HINCRBY', KEYS[1], 'tail', 1)
    redis.call('ZADD', q, 0, ARGV[b + 1] .. string.format('%016x', 4503599627370496 + order) .. ARGV[b + 2])
    redis.call('SADD', KEYS[2], hosts[i])
    added = added + 1
    if qcap > 0 and redis.call('ZCARD', q) > qcap then
      redis.call('ZPOPMAX', q)
      added = added - 1
      dropped = dropped + 1
      qdropped = qdropped + 1
    end
  end
end
for _, f in ipairs(frees) do
  local i = f[1]
  redis.call('HDEL', KEYS[3], hosts[i])
  if f[2] ~= '' then redis.call('HSET', KEYS[4], hosts[i], f[2]) end
  if redis.call('ZCARD', KEYS[6 + i]) == 0 then redis.call('SREM', KEYS[2], hosts[i]) end
end
if added > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', added)
  redis.call('HINCRBY', KEYS[1], 'enqueued', added)
end
if dropped > 0 then redis.call('HINCRBY', KEYS[1], 'dropped', dropped) end
if qdropped > 0 then redis.call('HINCRBY', KEYS[1], 'dropped_queue', qdropped) end
if #frees > 0 then redis.call('HINCRBY', KEYS[1], 'inflight', -#frees) end
redis.call('HSET', KEYS[1], 'applied', ARGV[1])
for k = 0, m - 1 do
  redis.call('ZADD', KEYS[6], ARGV[ma + k], ARGV[ma + k])
end
if floor ~= '0' then redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', floor) end
local out = {1}
for k = 0, n - 1 do
  out[#out + 1] = redis.call('ZRANGE', KEYS[6 + tonumber(ARGV[a + k])], 0, 0)[1] or ''
end
return out
`)

var _ Stepper = (*Redis)(nil)

// Step runs a frontier step in two calls: stepScript (apply, mark, read the
// due hosts' heads) and popScript. Apply, MarkApplied and Pop in turn took
// five round trips (two optimistic reads and three writes). The two calls
// are not one atomic write: a failure between them leaves the batch applied
// and nothing popped, which a retried step reports as Applied false (see
// Step) and a reload issues.
func (r *Redis) Step(ctx context.Context, p int, req StepRequest) (StepResult, error) {
	if err := r.check(ctx, p); err != nil {
		return StepResult{}, err
	}
	items, err := encodeQueued(req.Enqueue)
	if err != nil {
		return StepResult{}, err
	}
	keys := []string{r.metaKey(p), r.hostsKey(p), r.inflightKey(p), r.restKey(p), r.issuedKey(p), r.appliedKey(p)}
	var hosts []any
	index := map[string]int{}
	hostIndex := func(h string) int {
		if i, ok := index[h]; ok {
			return i
		}
		hosts = append(hosts, h)
		keys = append(keys, r.queueKey(p, h))
		index[h] = len(hosts)
		return len(hosts)
	}
	tail := make([]any, 0, 1+3*len(items)+1+4*len(req.Done)+2+len(req.Applied)+1+len(req.Issue))
	tail = append(tail, len(items))
	for _, it := range items {
		tail = append(tail, hostIndex(it.host), rankHexOf(it.rank), it.data)
	}
	var dones []any
	for _, d := range req.Done {
		if validHost(d.Host) != nil {
			continue
		}
		notBefore := ""
		if !d.NotBefore.IsZero() {
			notBefore = strconv.FormatInt(d.NotBefore.UnixMilli(), 10)
		}
		dones = append(dones, hostIndex(d.Host), inFlightPrefix(d.TaskID), d.TaskID, notBefore)
	}
	tail = append(tail, len(dones)/4)
	tail = append(tail, dones...)
	tail = append(tail, len(req.Applied))
	for _, s := range req.Applied {
		tail = append(tail, strconv.FormatUint(s, 10))
	}
	tail = append(tail, strconv.FormatUint(req.Floor, 10))
	var due []Issue
	var dueIdx []any
	for _, is := range req.Issue {
		if validHost(is.Host) == nil {
			due = append(due, is)
			dueIdx = append(dueIdx, hostIndex(is.Host))
		}
	}
	tail = append(tail, len(dueIdx))
	tail = append(tail, dueIdx...)
	l := r.currentLimits()
	args := make([]any, 0, 4+len(hosts)+len(tail))
	args = append(args, strconv.FormatUint(req.Seq, 10), l.HostBudget, l.HostQueue, len(hosts))
	args = append(args, hosts...)
	args = append(args, tail...)

	reply, err := stepScript.Run(ctx, r.c, keys, args...).Result()
	if err != nil {
		return StepResult{}, fmt.Errorf("store: step in %s (%s): %w", r.base(p), r.inflightKey(p), redisErr(err))
	}
	out, ok := reply.([]any)
	if !ok {
		return StepResult{}, nil // 0: applied before
	}
	if len(out) != 1+len(due) {
		return StepResult{}, fmt.Errorf("store: step in %s: bad script reply of %d values for %d hosts", r.base(p), len(out), len(due))
	}
	heads := make([]string, len(due))
	for i := range due {
		heads[i], _ = out[1+i].(string)
	}
	tasks, err := r.popHeads(ctx, p, due, heads)
	if err != nil {
		return StepResult{}, err
	}
	return StepResult{Applied: true, Tasks: tasks}, nil
}
