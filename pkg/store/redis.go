package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// Redis is the Store of the cluster mode. Every key of partition p carries
// the hash tag {<prefix>:p<p>}, so a partition lives on one Redis, one shard
// of a client-side Ring or one Cluster slot, and its Lua scripts (which only
// touch keys of one partition) run there atomically:
//
//	<prefix>:{<prefix>:p7}:seen        hash format, depth, split, count
//	<prefix>:{<prefix>:p7}:seen:<d>:<i> sorted 8-byte big-endian fingerprints
//	                                   whose top d bits are i (redis_seen.go)
//	<prefix>:{<prefix>:p7}:hosts       set of hosts with a queue or a task in flight
//	<prefix>:{<prefix>:p7}:q:<host>    sorted set (all scores 0) of members
//	                                   rank(16 hex) order(16 hex) JSON Queued:
//	                                   lexicographic order is queue order
//	<prefix>:{<prefix>:p7}:inflight    hash host -> JSON InFlight
//	<prefix>:{<prefix>:p7}:rest        hash host -> unix ms NotBefore
//	<prefix>:{<prefix>:p7}:issued      hash host -> URLs issued (host budget)
//	<prefix>:{<prefix>:p7}:meta        hash applied, queued, inflight, enqueued,
//	                                   dropped, dropped_queue, head, tail
//	<prefix>:{<prefix>:global}:budget  pages issued so far (crawl-wide)
//
// JSON is only ever encoded by Go: scripts move strings around, compare them
// and, in a frontier step (stepScript, redis_step.go), splice Go's pieces of
// an in-flight entry around a queue entry's link fields. Elsewhere the Go side
// reads what it needs first (an optimistic read, then a compare-and-set in the
// script). Since a partition has one owner at a time the compare never fails
// in practice; if it does, that entry is left alone.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	bad    error // invalid prefix, reported by every call
	closed atomic.Bool
	geoms  sync.Map // partition -> seenGeom, the seen set's bucket geometry as last seen
	limits atomic.Pointer[Limits]
}

var _ Store = (*Redis)(nil)

// pingTimeout bounds the reachability check of OpenRedis.
const pingTimeout = 5 * time.Second

// NewRedis wraps a client (a *redis.Client, *redis.Ring or
// *redis.ClusterClient). Keys start with prefix, which must not contain
// braces (they would change the hash tag). Close closes the client.
func NewRedis(c redis.UniversalClient, prefix string) *Redis {
	r := &Redis{c: c, prefix: prefix}
	if strings.ContainsAny(prefix, "{}") {
		r.bad = fmt.Errorf("store: redis key prefix %q must not contain braces", prefix)
	}
	return r
}

// OpenRedis connects and pings: one address is a single Redis, several are a
// client-side Ring of independent shards, cluster=true is a Redis Cluster
// (addrs are seed nodes). opts add credentials and TLS.
func OpenRedis(ctx context.Context, addrs []string, cluster bool, prefix string, opts ...RedisOption) (*Redis, error) {
	if len(addrs) == 0 {
		return nil, errors.New("store: no redis address")
	}
	conn := newRedisConn(opts)
	var c redis.UniversalClient
	switch {
	case cluster:
		c = redis.NewClusterClient(conn.cluster(addrs))
	case len(addrs) == 1:
		c = redis.NewClient(conn.single(addrs[0]))
	default:
		c = newRing(addrs, conn)
	}
	r := NewRedis(c, prefix)
	if r.bad != nil {
		c.Close()
		return nil, r.bad
	}
	if err := ping(ctx, c, addrs); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

// newRing builds a Ring whose shards are named by their addresses, so the
// key -> shard mapping does not depend on the order of the list. go-redis
// hashes only the {hash tag} of a key (hashtag.Key in ring.go), which keeps a
// partition on one shard. The heartbeat never marks a shard down: rehashing a
// down shard's partitions onto the others would silently split durable state,
// so calls on its partitions fail instead until it is back.
func newRing(addrs []string, conn redisConn) *redis.Ring {
	shards := make(map[string]string, len(addrs))
	for _, a := range addrs {
		shards[a] = a
	}
	return redis.NewRing(&redis.RingOptions{
		Addrs:       shards,
		HeartbeatFn: func(context.Context, *redis.Client) bool { return true },
		Username:    conn.username, Password: conn.password, TLSConfig: conn.tls, ReadTimeout: conn.readTimeout,
	})
}

// ping checks every shard (or the cluster) and names the address that failed.
func ping(ctx context.Context, c redis.UniversalClient, addrs []string) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	check := func(ctx context.Context, sc *redis.Client) error {
		if err := sc.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("store: redis %s unreachable: %w", sc.Options().Addr, err)
		}
		return nil
	}
	switch c := c.(type) {
	case *redis.Ring:
		return c.ForEachShard(ctx, check)
	case *redis.Client:
		return check(ctx, c)
	default:
		if err := c.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("store: redis cluster %s unreachable: %w", strings.Join(addrs, ","), err)
		}
		return nil
	}
}

// Close closes the client; later calls return ErrClosed.
func (r *Redis) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	return r.c.Close()
}

// ---- keys ----

func (r *Redis) base(p int) string {
	return r.prefix + ":{" + r.prefix + ":p" + strconv.Itoa(p) + "}"
}

func (r *Redis) hostsKey(p int) string           { return r.base(p) + ":hosts" }
func (r *Redis) queueKey(p int, h string) string { return r.base(p) + ":q:" + h }
func (r *Redis) inflightKey(p int) string        { return r.base(p) + ":inflight" }
func (r *Redis) metaKey(p int) string            { return r.base(p) + ":meta" }
func (r *Redis) restKey(p int) string            { return r.base(p) + ":rest" }
func (r *Redis) issuedKey(p int) string          { return r.base(p) + ":issued" }
func (r *Redis) budgetKey() string {
	return r.prefix + ":{" + r.prefix + ":global}:budget"
}

func (r *Redis) check(ctx context.Context, p int) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if r.bad != nil {
		return r.bad
	}
	return checkArgs(ctx, p)
}

// pipelined runs fn's commands in one pipeline and returns the first error
// of any command; a missing key or field (redis.Nil) is not an error. Checking
// every command matters: Pipelined only returns the first error, which may be
// a harmless redis.Nil hiding a real failure.
func (r *Redis) pipelined(ctx context.Context, fn func(redis.Pipeliner) error) error {
	cmds, err := r.c.Pipelined(ctx, fn)
	if err != nil && !errors.Is(err, redis.Nil) {
		return redisErr(err)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return redisErr(err)
		}
	}
	return nil
}

// redisErr maps go-redis's closed-client error to ErrClosed.
func redisErr(err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return ErrClosed
	}
	return err
}

// ---- frontier ----

// queueMember is a queue entry: the rank and order prefixes make the
// lexicographic order of a sorted set with equal scores the queue order.
// Scripts build members from the rank (computed here) and an order number
// they take from the partition's meta hash: 2^52 + tail for an append,
// 2^52 + head (head <= 0, counting down) for a push to the front; Lua's
// doubles hold those exactly.
const queueMemberPrefix = 32

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
// ARGV = host budget, N x (host, expected head member, in-flight JSON).
// Returns the indexes issued.
var popScript = redis.NewScript(`
local budget = tonumber(ARGV[1])
local issued, dropped = {}, 0
for i = 1, #KEYS - 5 do
  local host, head, task = ARGV[3*i - 1], ARGV[3*i], ARGV[3*i + 1]
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
      redis.call('HINCRBY', KEYS[4], host, 1)
      redis.call('HDEL', KEYS[3], host)
      issued[#issued + 1] = i
    end
  end
end
if #issued > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', -#issued)
  redis.call('HINCRBY', KEYS[1], 'inflight', #issued)
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
// its head is still that member.
func (r *Redis) popHeads(ctx context.Context, p int, reqs []Issue, heads []string) ([]InFlight, error) {
	keys := []string{r.metaKey(p), r.inflightKey(p), r.restKey(p), r.issuedKey(p), r.hostsKey(p)}
	args := []any{r.currentLimits().HostBudget}
	var cands []InFlight
	for i, req := range reqs {
		if heads[i] == "" {
			continue
		}
		var q Queued
		if err := json.Unmarshal([]byte(queuedOfMember(heads[i])), &q); err != nil {
			return nil, fmt.Errorf("store: corrupt queue entry at head of %s: %w", r.queueKey(p, req.Host), err)
		}
		if req.TaskID == "" {
			// The member's rank and order are the entry's place.
			req.TaskID = DerivedTaskID(p, []byte(req.Host+"\x00"+heads[i][:queueMemberPrefix]), q)
		}
		in := newInFlight(p, q, req)
		data, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		keys = append(keys, r.queueKey(p, req.Host))
		args = append(args, req.Host, heads[i], data)
		cands = append(cands, in)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	idx, err := popScript.Run(ctx, r.c, keys, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("store: pop from %s: %w", r.base(p), redisErr(err))
	}
	out := make([]InFlight, 0, len(idx))
	for _, i := range idx {
		if i < 1 || int(i) > len(cands) {
			return nil, fmt.Errorf("store: pop from %s: bad script reply %d", r.base(p), i)
		}
		out = append(out, cands[i-1])
	}
	return out, nil
}

// expireScript: KEYS = meta, hosts, inflight, q:<host>; ARGV = host, expected
// in-flight JSON, rank hex, JSON Queued to put first among its rank ("" =
// drop). Returns 1 requeued, 0 dropped, -1 in-flight entry changed (ignored).
var expireScript = redis.NewScript(`
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return -1 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'inflight', -1)
if ARGV[4] ~= '' then
  local order = redis.call('HINCRBY', KEYS[1], 'head', -1)
  redis.call('ZADD', KEYS[4], 0, ARGV[3] .. string.format('%016x', 4503599627370496 + order) .. ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'queued', 1)
  return 1
end
if redis.call('ZCARD', KEYS[4]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return 0
`)

// Expire handles a task whose lease ran out; see Frontier.Expire.
func (r *Redis) Expire(ctx context.Context, p int, host, taskID string, maxAttempts int) (bool, error) {
	if err := r.check(ctx, p); err != nil {
		return false, err
	}
	if validHost(host) != nil {
		return false, nil
	}
	inflight := r.inflightKey(p)
	cur, err := r.c.HGet(ctx, inflight, host).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, redisErr(err)
	}
	in, err := decodeInFlight([]byte(cur))
	if err != nil {
		return false, fmt.Errorf("store: corrupt in-flight entry %s[%s]: %w", inflight, host, err)
	}
	if in.Task.ID != taskID {
		return false, nil
	}
	requeue, rk := "", ""
	if in.Task.Attempt < maxAttempts {
		q := retry(in)
		data, err := json.Marshal(q)
		if err != nil {
			return false, err
		}
		requeue, rk = string(data), rankHex(q.Link)
	}
	keys := []string{r.metaKey(p), r.hostsKey(p), inflight, r.queueKey(p, host)}
	res, err := expireScript.Run(ctx, r.c, keys, host, cur, rk, requeue).Int()
	if err != nil {
		return false, fmt.Errorf("store: expire in %s: %w", r.base(p), redisErr(err))
	}
	return res == 1, nil
}

// Load returns partition p's applied sequence and its non-idle hosts.
func (r *Redis) Load(ctx context.Context, p int) (PartitionState, error) {
	if err := r.check(ctx, p); err != nil {
		return PartitionState{}, err
	}
	meta, inflight := r.metaKey(p), r.inflightKey(p)
	var appliedCmd *redis.StringCmd
	var hostsCmd *redis.StringSliceCmd
	var flightCmd, restCmd *redis.MapStringStringCmd
	err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
		appliedCmd = pipe.HGet(ctx, meta, "applied")
		hostsCmd = pipe.SMembers(ctx, r.hostsKey(p))
		flightCmd = pipe.HGetAll(ctx, inflight)
		restCmd = pipe.HGetAll(ctx, r.restKey(p))
		return nil
	})
	if err != nil {
		return PartitionState{}, err
	}
	var st PartitionState
	if st.Applied, err = parseCounter(appliedCmd, meta); err != nil {
		return PartitionState{}, err
	}

	states := map[string]*HostState{}
	for _, h := range hostsCmd.Val() {
		states[h] = &HostState{Host: h}
	}
	for h, v := range flightCmd.Val() {
		in, err := decodeInFlight([]byte(v))
		if err != nil {
			return PartitionState{}, fmt.Errorf("store: corrupt in-flight entry %s[%s]: %w", inflight, h, err)
		}
		if states[h] == nil { // not expected: hosts covers in-flight hosts
			states[h] = &HostState{Host: h}
		}
		states[h].InFlight = &in
	}
	if err := r.queueLengths(ctx, p, states); err != nil {
		return PartitionState{}, err
	}
	now := time.Now()
	var past []string
	for h, v := range restCmd.Val() {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return PartitionState{}, fmt.Errorf("store: corrupt rest entry %s[%s]: %w", r.restKey(p), h, err)
		}
		at := time.UnixMilli(ms)
		if !at.After(now) {
			past = append(past, h)
			continue
		}
		if states[h] == nil {
			states[h] = &HostState{Host: h}
		}
		states[h].NotBefore = at
	}
	if len(past) > 0 { // forget politeness times that have passed
		if err := r.c.HDel(ctx, r.restKey(p), past...).Err(); err != nil {
			return PartitionState{}, redisErr(err)
		}
	}
	for h, s := range states {
		if s.Queued == 0 && s.InFlight == nil && s.NotBefore.IsZero() {
			delete(states, h)
		}
	}
	st.Hosts = sortedHosts(states)
	return st, nil
}

// queueLengths fills in Queued with one pipeline of LLENs.
func (r *Redis) queueLengths(ctx context.Context, p int, states map[string]*HostState) error {
	if len(states) == 0 {
		return nil
	}
	lens := make(map[string]*redis.IntCmd, len(states))
	err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
		for h := range states {
			lens[h] = pipe.ZCard(ctx, r.queueKey(p, h))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for h, c := range lens {
		states[h].Queued = int(c.Val())
	}
	return nil
}

// budgetScript: KEYS = budget; ARGV = n, max. Same rule as grant().
var budgetScript = redis.NewScript(`
local issued = tonumber(redis.call('GET', KEYS[1]) or '0')
local n, max = tonumber(ARGV[1]), tonumber(ARGV[2])
local g = n
if max > 0 then g = math.max(0, math.min(n, max - issued)) end
if g > 0 then redis.call('INCRBY', KEYS[1], g) end
return g
`)

// TakeBudget takes up to n units of the global page budget.
func (r *Redis) TakeBudget(ctx context.Context, n, max int) (int, error) {
	if err := r.check(ctx, 0); err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, nil
	}
	g, err := budgetScript.Run(ctx, r.c, []string{r.budgetKey()}, n, max).Int()
	if err != nil {
		return 0, fmt.Errorf("store: take budget from %s: %w", r.budgetKey(), redisErr(err))
	}
	return g, nil
}

// Stats reads each partition's meta hash and the budget in one pipeline.
func (r *Redis) Stats(ctx context.Context, partitions []int) (Stats, error) {
	if err := r.check(ctx, 0); err != nil {
		return Stats{}, err
	}
	metas := make([]*redis.SliceCmd, len(partitions))
	var budget *redis.StringCmd
	err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
		budget = pipe.Get(ctx, r.budgetKey())
		for i, p := range partitions {
			metas[i] = pipe.HMGet(ctx, r.metaKey(p), "queued", "inflight", "enqueued", "dropped", "dropped_queue")
		}
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	var s Stats
	if s.Issued, err = parseCounter(budget, r.budgetKey()); err != nil {
		return Stats{}, err
	}
	for i, p := range partitions {
		v := metas[i].Val()
		var c [5]int64
		for j := range c {
			str, _ := v[j].(string)
			if str == "" {
				continue
			}
			if c[j], err = strconv.ParseInt(str, 10, 64); err != nil {
				return Stats{}, fmt.Errorf("store: corrupt counter in %s: %w", r.metaKey(p), err)
			}
		}
		s.Queued += c[0]
		s.InFlight += c[1]
		s.Enqueued += uint64(c[2])
		s.Dropped += uint64(c[3])
		s.DroppedQueue += uint64(c[4])
	}
	return s, nil
}

// parseCounter reads an unsigned counter; a missing key or field is 0.
func parseCounter(c *redis.StringCmd, key string) (uint64, error) {
	v, err := c.Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, redisErr(err)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: corrupt counter in %s: %w", key, err)
	}
	return n, nil
}
