package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// stepScript is a frontier step on Redis in one call: the intake batch (as
// applyScript), its stream sequences marked in the intake log (as
// MarkApplied) and the pop of the hosts due (as popScript), after the batch's
// URLs were queued. With seq "" it is a pop alone (Pop): no batch, and the
// applied sequence is neither checked nor set.
//
// A done frees its host when the host's in-flight entry is the task named:
// Go writes entries starting with inFlightPrefix(task ID), which the script
// compares; any other entry is decoded (cjson) and its task ID compared. Every
// in-flight entry is read and checked before anything is written, so a corrupt
// one fails the call with nothing changed.
//
// The pop writes the in-flight entry Go would write (json.Marshal of
// newInFlight: TestRedisSplicedInFlight) without Go reading the head first:
// a queue entry is {"host":<host>,"link":{<link>},"attempt":<n>} and a task
// has the link's fields, in the same order, between its host and its
// attempt, so the entry is Go's prefix (up to the host), the link's fields,
// the attempt and Go's suffix (the times). A head not in that form (not
// written by this build's Go) is left in place and returned with a negative
// index: Go pops it with popScript.
//
// KEYS = meta, hosts, inflight, rest, issued, applied, q:<host_1..H>;
// ARGV = seq, host budget, queue cap, H, host_1..H,
// E, E x (host index, rank hex, JSON Queued),
// D, D x (host index, in-flight prefix, task ID, NotBefore ms or ""),
// M, M x stream sequence, floor ("0": keep),
// I, I x (host index, in-flight prefix, queue entry prefix, in-flight suffix,
// reserved entry, reserve).
// Returns 0 (the batch was applied before: nothing changed) or
// {1, I' x (issue number, head member, next member)}: the hosts popped
// (issue numbers 1..I) and those left for popScript (negative issue
// numbers).
//
// A reserved entry (the first queueMemberPrefix characters of a member:
// its rank and order, Issue.Next) is popped instead of the head, or nothing
// is if it is gone. With reserve set ("1": the task ID is derived from the
// entry), a host popped and allowed another pop by its budget also returns
// its new head, the next member, from which Go builds the reservation
// (InFlight.Next); "" otherwise.
var stepScript = redis.NewScript(`
local function above(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local batch = ARGV[1] ~= ''
if batch then
  local applied = redis.call('HGET', KEYS[1], 'applied') or '0'
  if not above(ARGV[1], applied) then return 0 end
end
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
for _, f in ipairs(frees) do redis.call('HDEL', KEYS[3], hosts[f[1]]) end
if batch then
  redis.call('HSET', KEYS[1], 'applied', ARGV[1])
  for k0 = 0, m - 1, 1000 do
    local zs = {}
    for k = k0, math.min(m, k0 + 1000) - 1 do
      zs[#zs + 1] = ARGV[ma + k]
      zs[#zs + 1] = ARGV[ma + k]
    end
    redis.call('ZADD', KEYS[6], unpack(zs))
  end
  if floor ~= '0' then redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', floor) end
end

-- A host freed here and popped again at once needs no politeness time
-- (the pop would delete it) nor the check of its queue: both are done after
-- the pops, for the freed hosts that were not popped.
local out, issued, gone, popped = {1}, 0, 0, {}
for k = 1, n do
  local i = tonumber(ARGV[a])
  local host, q = hosts[i], KEYS[6 + i]
  if redis.call('HEXISTS', KEYS[3], host) == 0 then
    if budget > 0 and tonumber(redis.call('HGET', KEYS[5], host) or '0') >= budget then
      local c = redis.call('ZCARD', q)
      if c > 0 then
        redis.call('DEL', q)
        gone = gone + c
      end
      redis.call('SREM', KEYS[2], host)
    else
      local head, resv = nil, ARGV[a + 4]
      if resv == '' then
        head = redis.call('ZRANGE', q, 0, 0)[1]
      else
        head = redis.call('ZRANGEBYLEX', q, '[' .. resv, '+', 'LIMIT', 0, 1)[1]
        if head and string.sub(head, 1, #resv) ~= resv then head = nil end
      end
      if head then
        local data, qpre = string.sub(head, 33), ARGV[a + 2]
        local s, _, att = string.find(data, '},"attempt":(%d+)}$')
        local nxt = ''
        if ARGV[a + 1] ~= '' and s and s > #qpre and string.sub(data, 1, #qpre) == qpre then
          redis.call('ZREM', q, head)
          redis.call('HSET', KEYS[3], host, ARGV[a + 1] .. string.sub(data, #qpre + 1, s - 1) .. ',"attempt":' .. att .. ARGV[a + 3])
          local taken = redis.call('HINCRBY', KEYS[5], host, 1)
          if freeing[i] then popped[i] = true else redis.call('HDEL', KEYS[4], host) end
          issued = issued + 1
          out[#out + 1] = k
          if ARGV[a + 5] ~= '' and (budget <= 0 or taken < budget) then
            nxt = redis.call('ZRANGE', q, 0, 0)[1] or ''
          end
        else
          out[#out + 1] = -k
        end
        out[#out + 1] = head
        out[#out + 1] = nxt
      end
    end
  end
  a = a + 6
end
for _, f in ipairs(frees) do
  local i = f[1]
  if not popped[i] then
    if f[2] ~= '' then redis.call('HSET', KEYS[4], hosts[i], f[2]) end
    if redis.call('ZCARD', KEYS[6 + i]) == 0 then redis.call('SREM', KEYS[2], hosts[i]) end
  end
end
local queued = added - issued - gone
if queued ~= 0 then redis.call('HINCRBY', KEYS[1], 'queued', queued) end
if added > 0 then redis.call('HINCRBY', KEYS[1], 'enqueued', added) end
if dropped + gone > 0 then redis.call('HINCRBY', KEYS[1], 'dropped', dropped + gone) end
if qdropped > 0 then redis.call('HINCRBY', KEYS[1], 'dropped_queue', qdropped) end
local inflight = issued - #frees
if inflight ~= 0 then redis.call('HINCRBY', KEYS[1], 'inflight', inflight) end
return out
`)

var _ Stepper = (*Redis)(nil)

// Step applies, marks and pops in one script (stepScript); see Stepper.
func (r *Redis) Step(ctx context.Context, p int, req StepRequest) (StepResult, error) {
	return r.step(ctx, p, req, true)
}

// step runs stepScript; batch false is a pop alone (req.Issue).
func (r *Redis) step(ctx context.Context, p int, req StepRequest, batch bool) (StepResult, error) {
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
	tail := make([]any, 0, 1+3*len(items)+1+4*len(req.Done)+2+len(req.Applied)+1+4*len(req.Issue))
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
	var reserve []bool // by due: the ID is derived, and the pop reserves
	var pops []any
	for _, is := range req.Issue {
		if validHost(is.Host) != nil {
			continue
		}
		derived, resv := is.TaskID == "", ""
		if is.Next != nil {
			// The reserved entry, published already: that one or none.
			k := is.Next.Key
			if !derived || len(k) != len(is.Host)+1+queueMemberPrefix || string(k[:len(is.Host)+1]) != is.Host+"\x00" {
				continue
			}
			resv, is.TaskID = string(k[len(is.Host)+1:]), is.Next.TaskID
		}
		pre, qpre, suf, err := spliceParts(p, is)
		if err != nil {
			return StepResult{}, err
		}
		due = append(due, is)
		reserve = append(reserve, derived)
		pops = append(pops, hostIndex(is.Host), pre, qpre, suf, resv, flag(derived))
	}
	tail = append(tail, len(due))
	tail = append(tail, pops...)
	l := r.currentLimits()
	seq := ""
	if batch {
		seq = strconv.FormatUint(req.Seq, 10)
	}
	args := make([]any, 0, 4+len(hosts)+len(tail))
	args = append(args, seq, l.HostBudget, l.HostQueue, len(hosts))
	args = append(args, hosts...)
	args = append(args, tail...)

	if batch {
		if err := r.scheduleDone(ctx, p, req.Done); err != nil {
			return StepResult{}, err
		}
		if err := r.promote(ctx, p, req.Promote); err != nil {
			return StepResult{}, err
		}
	}
	reply, err := stepScript.Run(ctx, r.c, keys, args...).Result()
	if err != nil {
		return StepResult{}, fmt.Errorf("store: step in %s (%s): %w", r.base(p), r.inflightKey(p), redisErr(err))
	}
	out, ok := reply.([]any)
	if !ok {
		return StepResult{}, nil // 0: applied before
	}
	if len(out)%3 != 1 {
		return StepResult{}, fmt.Errorf("store: step in %s: bad script reply of %d values", r.base(p), len(out))
	}
	tasks := make([]InFlight, 0, len(out)/3)
	var left []Issue // heads not in this build's form, or IDs to derive: popScript's
	var leftHeads []string
	var leftReserve []bool
	var leftAt []int // where their tasks go in tasks
	for j := 1; j < len(out); j += 3 {
		k, _ := out[j].(int64)
		head, _ := out[j+1].(string)
		next, _ := out[j+2].(string)
		if k == 0 || int(max(k, -k)) > len(due) {
			return StepResult{}, fmt.Errorf("store: step in %s: bad script reply %v", r.base(p), out[j])
		}
		if k < 0 {
			left = append(left, due[-k-1])
			leftHeads = append(leftHeads, head)
			leftReserve = append(leftReserve, reserve[-k-1])
			leftAt = append(leftAt, len(tasks))
			continue
		}
		is := due[k-1]
		var q Queued
		if err := unmarshal([]byte(queuedOfMember(head)), &q); err != nil {
			return StepResult{}, fmt.Errorf("store: corrupt queue entry at head of %s: %w", r.queueKey(p, is.Host), err)
		}
		in := newInFlight(p, q, is)
		if in.Next, err = r.nextOf(p, is.Host, next); err != nil {
			return StepResult{}, err
		}
		tasks = append(tasks, in)
	}
	if len(left) > 0 {
		more, err := r.popHeads(ctx, p, left, leftHeads, leftReserve)
		if err != nil {
			return StepResult{}, err
		}
		tasks = mergeTasks(tasks, more, left, leftAt)
	}
	return StepResult{Applied: true, Tasks: tasks}, nil
}

// flag is a script's boolean argument: "1" or "".
func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// nextOf is the reservation (InFlight.Next) of a host's next member as a
// pop script returned it ("": none): its key is the host and the member's
// rank and order, as popHeads derives a task ID from.
func (r *Redis) nextOf(p int, host, member string) (*Next, error) {
	if member == "" {
		return nil, nil
	}
	var q Queued
	if err := unmarshal([]byte(queuedOfMember(member)), &q); err != nil {
		return nil, fmt.Errorf("store: corrupt queue entry in %s: %w", r.queueKey(p, host), err)
	}
	rank, err := strconv.ParseUint(member[:16], 16, 64)
	if err != nil {
		return nil, fmt.Errorf("store: corrupt queue entry in %s: rank %q: %w", r.queueKey(p, host), member[:16], err)
	}
	key := memberKey(host, member)
	return &Next{Key: key, TaskID: DerivedTaskID(p, key, q), Queued: q, Rank: rank}, nil
}

// mergeTasks puts the tasks popScript popped for left (some of them, in
// order) back among the others, at the places leftAt kept for them, so that
// tasks stay in request order.
func mergeTasks(tasks, more []InFlight, left []Issue, leftAt []int) []InFlight {
	out := make([]InFlight, 0, len(tasks)+len(more))
	t, m := 0, 0
	for i, at := range leftAt {
		out = append(out, tasks[t:at]...)
		t = at
		if m < len(more) && more[m].Task.Host == left[i].Host {
			out = append(out, more[m])
			m++
		}
	}
	return append(out, tasks[t:]...)
}

// spliceMark stands for the link's fields and the attempt in the in-flight
// entry spliceParts cuts up: a URL of one NUL, which no host may contain.
const spliceMark = `"url":"\u0000","depth":0,"attempt":1`

// spliceParts are the pieces of the in-flight entry of req that stepScript
// puts around a queue entry's link fields: the entry up to the host (pre),
// the queue entry up to the link's fields (qpre) and the entry from the
// times on (suf). A request without a task ID gets no pre: its ID is derived
// from the entry (DerivedTaskID), which popScript does.
func spliceParts(p int, is Issue) (pre, qpre, suf string, err error) {
	if is.TaskID == "" {
		return "", "", "", nil
	}
	data, err := marshal(newInFlight(p, Queued{Host: is.Host, Link: messages.Link{URL: "\x00"}, Attempt: 1}, is))
	if err != nil {
		return "", "", "", err
	}
	host, err := marshal(is.Host)
	if err != nil {
		return "", "", "", err
	}
	whole := string(data)
	at := strings.Index(whole, spliceMark)
	if at < 0 {
		return "", "", "", fmt.Errorf("store: in-flight entry of %s not in the form the pop script splices: %s", is.Host, whole)
	}
	return whole[:at], `{"host":` + string(host) + `,"link":{`, whole[at+len(spliceMark):], nil
}

var _ Early = (*Redis)(nil)

// StepEarly is Step, then early with its result: the script is the write,
// whole once it returns, so its tasks are as final when they are handed
// over as they will ever be. Being Early is what matters to the frontier:
// it derives task IDs from queue entries (Issue.TaskID empty) and publishes
// a host's reserved next task (InFlight.Next) at its done report, before
// the step that records it (docs/frontier.md, "The reserved next task").
func (r *Redis) StepEarly(ctx context.Context, p int, req StepRequest, early func(StepResult)) (StepResult, error) {
	res, err := r.Step(ctx, p, req)
	if err == nil {
		early(res)
	}
	return res, err
}

// PopEarly is Pop, then early with its tasks (StepEarly).
func (r *Redis) PopEarly(ctx context.Context, p int, reqs []Issue, early func([]InFlight)) ([]InFlight, error) {
	tasks, err := r.Pop(ctx, p, reqs)
	if err == nil && early != nil {
		early(tasks)
	}
	return tasks, err
}

// PaceInterval is Early's: a Redis write waits for no company.
func (r *Redis) PaceInterval() time.Duration { return 0 }

// Hurry is Early's: nothing waits.
func (r *Redis) Hurry() {}
