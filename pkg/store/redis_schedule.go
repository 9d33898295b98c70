package store

// The revisit schedule on Redis: a sorted set <base>:sched (member the URL,
// score the due time in unix ms) and a hash <base>:sched-data (URL -> the
// entry's value, schedule.go). Keyed by URL, so scheduling a URL again
// replaces its entry.
//
// A step writes the schedule beside its script, not in it: the done
// reports' entries before the script (idempotent: the same URL, replaced),
// the promoted entries by promoteScript (atomic on its own: an entry leaves
// the schedule in the write that queues it) before the script pops. A crash
// between them leaves a done's entry scheduled while its done is replayed,
// which schedules it again: never lost, never queued twice.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

func (r *Redis) schedKey(p int) string     { return r.base(p) + ":sched" }
func (r *Redis) schedDataKey(p int) string { return r.base(p) + ":sched-data" }

// scheduleDone puts the revisits of done reports in the schedule.
func (r *Redis) scheduleDone(ctx context.Context, p int, done []Done) error {
	var entries []Scheduled
	for _, d := range done {
		if d.Revisit != nil {
			entries = append(entries, *d.Revisit)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	zs := make([]redis.Z, len(entries))
	data := make([]any, 0, 2*len(entries))
	for i, s := range entries {
		url, enc, err := encodeSched(s)
		if err != nil {
			return err
		}
		zs[i] = redis.Z{Score: float64(s.Due.UnixMilli()), Member: url}
		data = append(data, url, enc)
	}
	err := r.pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, r.schedDataKey(p), data...)
		pipe.ZAdd(ctx, r.schedKey(p), zs...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: schedule revisits in %s: %w", r.base(p), redisErr(err))
	}
	return nil
}

// promoteScript moves revisits from the schedule into their hosts' queues
// (as stepScript queues a URL, outside the host limits). An entry no
// longer in the schedule is skipped.
//
// KEYS = sched, sched-data, meta, hosts, q:<host_1..H>;
// ARGV = N, N x (URL, host index, host, rank hex, JSON Queued).
// Returns the number moved.
var promoteScript = redis.NewScript(`
local n, moved = tonumber(ARGV[1]), 0
for k = 0, n - 1 do
  local b = 2 + 5 * k
  local url = ARGV[b]
  if redis.call('ZREM', KEYS[1], url) == 1 then
    redis.call('HDEL', KEYS[2], url)
    local order = redis.call('HINCRBY', KEYS[3], 'tail', 1)
    redis.call('ZADD', KEYS[4 + tonumber(ARGV[b + 1])], 0, ARGV[b + 3] .. string.format('%016x', 4503599627370496 + order) .. ARGV[b + 4])
    redis.call('SADD', KEYS[4], ARGV[b + 2])
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('HINCRBY', KEYS[3], 'queued', moved)
  redis.call('HINCRBY', KEYS[3], 'enqueued', moved)
end
return moved
`)

// promote runs promoteScript for a step's Promote.
func (r *Redis) promote(ctx context.Context, p int, promote []Scheduled) error {
	if len(promote) == 0 {
		return nil
	}
	items, err := encodeQueued(scheduledQueued(promote))
	if err != nil {
		return err
	}
	keys := []string{r.schedKey(p), r.schedDataKey(p), r.metaKey(p), r.hostsKey(p)}
	index := map[string]int{}
	args := []any{len(items)}
	for i, it := range items {
		hi, ok := index[it.host]
		if !ok {
			keys = append(keys, r.queueKey(p, it.host))
			hi = len(keys) - 4
			index[it.host] = hi
		}
		args = append(args, promote[i].Queued.Link.URL, hi, it.host, rankHexOf(it.rank), it.data)
	}
	if err := promoteScript.Run(ctx, r.c, keys, args...).Err(); err != nil {
		return fmt.Errorf("store: promote revisits in %s: %w", r.base(p), redisErr(err))
	}
	return nil
}

// Due returns the revisits due at or before now; see Frontier.Due.
func (r *Redis) Due(ctx context.Context, p int, now time.Time, limit int) ([]Scheduled, error) {
	if err := r.check(ctx, p); err != nil {
		return nil, err
	}
	zs, err := r.c.ZRangeByScoreWithScores(ctx, r.schedKey(p), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("store: read revisits of %s: %w", r.base(p), redisErr(err))
	}
	if len(zs) == 0 {
		return nil, nil
	}
	urls := make([]string, len(zs))
	for i, z := range zs {
		urls[i], _ = z.Member.(string)
	}
	vals, err := r.c.HMGet(ctx, r.schedDataKey(p), urls...).Result()
	if err != nil {
		return nil, fmt.Errorf("store: read revisits of %s: %w", r.base(p), redisErr(err))
	}
	out := make([]Scheduled, 0, len(zs))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("store: revisit %s of %s has no entry in %s", urls[i], r.base(p), r.schedDataKey(p))
		}
		e, err := decodeSched(urls[i], []byte(s), time.UnixMilli(int64(zs[i].Score)))
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, r.schedDataKey(p))
		}
		out = append(out, e)
	}
	return out, nil
}
