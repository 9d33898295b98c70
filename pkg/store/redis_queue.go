package store

// The Redis store's host queues: Apply (an intake batch of new URLs and
// finished tasks) and Pop (issuing each host's head URL), with their Lua
// scripts and the queue member layout.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// queueMember is a queue entry: the rank and order prefixes make the
// lexicographic order of a sorted set with equal scores the queue order.
// Scripts build members from the rank (computed here) and an order number
// they take from the partition's meta hash: 2^52 + tail for an append,
// 2^52 + head (head <= 0, counting down) for a push to the front; Lua's
// doubles hold those exactly.
const queueMemberPrefix = 32

// memberKey is a queue member's place, the key its task ID is derived from
// (DerivedTaskID) and a reservation names (Next.Key): the host and the
// member's rank and order. m is at least queueMemberPrefix long.
func memberKey(host, m string) []byte { return []byte(host + "\x00" + m[:queueMemberPrefix]) }

func queuedOfMember(m string) string {
	if len(m) < queueMemberPrefix {
		return ""
	}
	return m[queueMemberPrefix:]
}

// applyScript: KEYS = meta, hosts, inflight, rest, issued, q:<host_1..H>;
// ARGV = seq, host budget, queue cap, H, host_1..H,
// E, E x (host index, rank hex, JSON Queued),
// D, D x (host index, expected in-flight JSON to free, NotBefore ms or "").
// Sequences are compared as decimal strings: Lua numbers are doubles, and a
// uint64 stream sequence must compare exactly.
var applyScript = redis.NewScript(`
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
local added, dropped, qdropped = 0, 0, 0
for _ = 1, e do
  local i = tonumber(ARGV[a])
  local q = KEYS[5 + i]
  if budget > 0 and tonumber(redis.call('HGET', KEYS[5], hosts[i]) or '0') >= budget then
    dropped = dropped + 1
  else
    local order = redis.call('HINCRBY', KEYS[1], 'tail', 1)
    redis.call('ZADD', q, 0, ARGV[a + 1] .. string.format('%016x', 4503599627370496 + order) .. ARGV[a + 2])
    redis.call('SADD', KEYS[2], hosts[i])
    added = added + 1
    if qcap > 0 and redis.call('ZCARD', q) > qcap then
      redis.call('ZPOPMAX', q)
      added = added - 1
      dropped = dropped + 1
      qdropped = qdropped + 1
    end
  end
  a = a + 3
end
local d = tonumber(ARGV[a]); a = a + 1
local freed = 0
for _ = 1, d do
  local i = tonumber(ARGV[a])
  if redis.call('HGET', KEYS[3], hosts[i]) == ARGV[a + 1] then
    redis.call('HDEL', KEYS[3], hosts[i])
    freed = freed + 1
    if ARGV[a + 2] ~= '' then redis.call('HSET', KEYS[4], hosts[i], ARGV[a + 2]) end
    if redis.call('ZCARD', KEYS[5 + i]) == 0 then redis.call('SREM', KEYS[2], hosts[i]) end
  end
  a = a + 3
end
if added > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', added)
  redis.call('HINCRBY', KEYS[1], 'enqueued', added)
end
if dropped > 0 then redis.call('HINCRBY', KEYS[1], 'dropped', dropped) end
if qdropped > 0 then redis.call('HINCRBY', KEYS[1], 'dropped_queue', qdropped) end
if freed > 0 then redis.call('HINCRBY', KEYS[1], 'inflight', -freed) end -- never '-0'
redis.call('HSET', KEYS[1], 'applied', ARGV[1])
return 1
`)

// SetLimits sets the per-host limits; see Limits.
func (r *Redis) SetLimits(l Limits) { r.limits.Store(&l) }

func (r *Redis) currentLimits() Limits {
	if l := r.limits.Load(); l != nil {
		return *l
	}
	return Limits{}
}

// Apply applies one intake batch; see Frontier.Apply.
func (r *Redis) Apply(ctx context.Context, p int, seq uint64, enqueue []Queued, done []Done) (bool, error) {
	if err := r.check(ctx, p); err != nil {
		return false, err
	}
	items, err := encodeQueued(enqueue)
	if err != nil {
		return false, err
	}
	applied, frees, err := r.readForApply(ctx, p, done)
	if err != nil || seq <= applied {
		return false, err
	}

	// Every queue key the script touches is passed in KEYS (Cluster rule).
	keys := []string{r.metaKey(p), r.hostsKey(p), r.inflightKey(p), r.restKey(p), r.issuedKey(p)}
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
	var tail []any
	tail = append(tail, len(items))
	for _, it := range items {
		tail = append(tail, hostIndex(it.host), rankHexOf(it.rank), it.data)
	}
	tail = append(tail, len(frees))
	for _, f := range frees {
		notBefore := ""
		if !f.notBefore.IsZero() {
			notBefore = strconv.FormatInt(f.notBefore.UnixMilli(), 10)
		}
		tail = append(tail, hostIndex(f.host), f.data, notBefore)
	}
	l := r.currentLimits()
	args := append([]any{strconv.FormatUint(seq, 10), l.HostBudget, l.HostQueue, len(hosts)}, hosts...)
	args = append(args, tail...)

	if err := r.scheduleDone(ctx, p, done); err != nil {
		return false, err
	}
	ok, err := applyScript.Run(ctx, r.c, keys, args...).Int()
	if err != nil {
		return false, fmt.Errorf("store: apply to %s: %w", r.base(p), redisErr(err))
	}
	return ok == 1, nil
}

// inFlightPrefix is how json.Marshal starts an InFlight of task id (the
// field order of InFlight and messages.FetchTask); store_test pins it.
func inFlightPrefix(id string) string {
	return `{"task":{"v":` + strconv.Itoa(messages.Version) + `,"id":` + strconv.Quote(id) + `,`
}

type encodedInFlight struct {
	host      string
	data      string
	notBefore time.Time
}

// readForApply reads the applied sequence and, for each done whose task ID
// matches the host's in-flight task, the in-flight entry to free.
func (r *Redis) readForApply(ctx context.Context, p int, done []Done) (uint64, []encodedInFlight, error) {
	var hosts []string
	for _, d := range done {
		if validHost(d.Host) == nil {
			hosts = append(hosts, d.Host)
		}
	}
	meta, inflight := r.metaKey(p), r.inflightKey(p)
	var appliedCmd *redis.StringCmd
	var flightCmd *redis.SliceCmd
	err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
		appliedCmd = pipe.HGet(ctx, meta, "applied")
		if len(hosts) > 0 {
			flightCmd = pipe.HMGet(ctx, inflight, hosts...)
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	applied, err := parseCounter(appliedCmd, meta)
	if err != nil || flightCmd == nil {
		return applied, nil, err
	}
	var frees []encodedInFlight
	j := 0
	for _, d := range done {
		if validHost(d.Host) != nil {
			continue
		}
		v, _ := flightCmd.Val()[j].(string)
		j++
		if v == "" {
			continue
		}
		// Go writes the task ID near the start of the entry: the common
		// case (the done matches) needs no JSON decode.
		if strings.HasPrefix(v, inFlightPrefix(d.TaskID)) {
			frees = append(frees, encodedInFlight{d.Host, v, d.NotBefore})
			continue
		}
		in, err := decodeInFlight([]byte(v))
		if err != nil {
			return 0, nil, fmt.Errorf("store: corrupt in-flight entry %s[%s]: %w", inflight, d.Host, err)
		}
		if in.Task.ID == d.TaskID {
			frees = append(frees, encodedInFlight{d.Host, v, d.NotBefore})
		}
	}
	return applied, frees, nil
}

// popScript: KEYS = meta, inflight, rest, issued, hosts, q:<host_1..N>;
// ARGV = host budget, N x (host, expected head member, in-flight JSON,
// reserve). Returns {index issued, next member} for each host popped: with
// reserve set ("1") and the host's budget allowing another pop, its new head
// (stepScript's reservation); "" otherwise.
var popScript = redis.NewScript(`
local budget = tonumber(ARGV[1])
local issued, npop, dropped = {}, 0, 0
for i = 1, #KEYS - 5 do
  local host, head, task, reserve = ARGV[4*i - 2], ARGV[4*i - 1], ARGV[4*i], ARGV[4*i + 1]
  local q = KEYS[5 + i]
  if redis.call('HEXISTS', KEYS[2], host) == 0 then
    if budget > 0 and tonumber(redis.call('HGET', KEYS[4], host) or '0') >= budget then
      local c = redis.call('ZCARD', q)
      if c > 0 then
        redis.call('DEL', q)
        dropped = dropped + c
      end
      redis.call('SREM', KEYS[5], host)
    elseif redis.call('ZRANGE', q, 0, 0)[1] == head then
      redis.call('ZREM', q, head)
      redis.call('HSET', KEYS[2], host, task)
      local taken = redis.call('HINCRBY', KEYS[4], host, 1)
      redis.call('HDEL', KEYS[3], host)
      local nxt = ''
      if reserve ~= '' and (budget <= 0 or taken < budget) then
        nxt = redis.call('ZRANGE', q, 0, 0)[1] or ''
      end
      issued[#issued + 1] = i
      issued[#issued + 1] = nxt
      npop = npop + 1
    end
  end
end
if npop > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', -npop)
  redis.call('HINCRBY', KEYS[1], 'inflight', npop)
end
if dropped > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', -dropped)
  redis.call('HINCRBY', KEYS[1], 'dropped', dropped)
end
return issued
`)

// Pop issues the head URL of each requested host; see Frontier.Pop.
func (r *Redis) Pop(ctx context.Context, p int, reqs []Issue) ([]InFlight, error) {
	if err := r.check(ctx, p); err != nil {
		return nil, err
	}
	res, err := r.step(ctx, p, StepRequest{Issue: reqs}, false)
	return res.Tasks, err
}

// popHeads is Pop once the head member of each requested host's queue is
// known ("" = empty queue or invalid host): the script pops a host only if
// its head is still that member. A host whose reserve is set gets its
// reservation (InFlight.Next).
func (r *Redis) popHeads(ctx context.Context, p int, reqs []Issue, heads []string, reserve []bool) ([]InFlight, error) {
	keys := []string{r.metaKey(p), r.inflightKey(p), r.restKey(p), r.issuedKey(p), r.hostsKey(p)}
	args := []any{r.currentLimits().HostBudget}
	var cands []InFlight
	for i, req := range reqs {
		if heads[i] == "" {
			continue
		}
		var q Queued
		if err := unmarshal([]byte(queuedOfMember(heads[i])), &q); err != nil {
			return nil, fmt.Errorf("store: corrupt queue entry at head of %s: %w", r.queueKey(p, req.Host), err)
		}
		if req.TaskID == "" {
			// The member's rank and order are the entry's place.
			req.TaskID = DerivedTaskID(p, memberKey(req.Host, heads[i]), q)
		}
		in := newInFlight(p, q, req)
		data, err := marshal(in)
		if err != nil {
			return nil, err
		}
		keys = append(keys, r.queueKey(p, req.Host))
		args = append(args, req.Host, heads[i], data, flag(reserve[i]))
		cands = append(cands, in)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	reply, err := popScript.Run(ctx, r.c, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("store: pop from %s: %w", r.base(p), redisErr(err))
	}
	if len(reply)%2 != 0 {
		return nil, fmt.Errorf("store: pop from %s: bad script reply of %d values", r.base(p), len(reply))
	}
	out := make([]InFlight, 0, len(reply)/2)
	for j := 0; j < len(reply); j += 2 {
		i, _ := reply[j].(int64)
		next, _ := reply[j+1].(string)
		if i < 1 || int(i) > len(cands) {
			return nil, fmt.Errorf("store: pop from %s: bad script reply %v", r.base(p), reply[j])
		}
		in := cands[i-1]
		if in.Next, err = r.nextOf(p, in.Task.Host, next); err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}
