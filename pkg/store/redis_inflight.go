package store

// The Redis store's tasks in flight: Expire (a lease that ran out) and Load
// (the hosts, tasks in flight and politeness times a partition's new owner
// picks up).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

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
		data, err := marshal(q)
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
