package store

// The Redis store's counters: the global page budget (TakeBudget) and the
// partitions' Stats.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

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
	sched := make([][3]*redis.IntCmd, len(partitions))
	now := time.Now()
	nowMs, hourMs := strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10)
	var budget *redis.StringCmd
	err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
		budget = pipe.Get(ctx, r.budgetKey())
		for i, p := range partitions {
			metas[i] = pipe.HMGet(ctx, r.metaKey(p), "queued", "inflight", "enqueued", "dropped", "dropped_queue")
			sched[i] = [3]*redis.IntCmd{pipe.ZCard(ctx, r.schedKey(p)),
				pipe.ZCount(ctx, r.schedKey(p), "-inf", nowMs), pipe.ZCount(ctx, r.schedKey(p), "-inf", hourMs)}
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
		s.Scheduled += sched[i][0].Val()
		s.DueNow += sched[i][1].Val()
		s.DueHour += sched[i][2].Val()
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
