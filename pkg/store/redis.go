package store

// The Redis store: the Redis type and its key layout, connecting (a single
// Redis, a Ring of shards or a Cluster), closing, and the call helpers of
// the redis_*.go files.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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
			return fmt.Errorf("store: redis %s unreachable: %w%s", sc.Options().Addr, err, redisHint(err))
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
			return fmt.Errorf("store: redis cluster %s unreachable: %w%s", strings.Join(addrs, ","), err, redisHint(err))
		}
		return nil
	}
}

// redisHint says what to do about a failed ping: a server refused or not
// answering, or one that wants a password.
func redisHint(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "invalid password"):
		return "; it wants a password: set TRAWLER_REDIS_PASSWORD"
	case errors.Is(err, context.DeadlineExceeded) || isNetError(err):
		return "; start Redis there, or point --redis at a running one"
	}
	return ""
}

// isNetError tells a failure to reach the server (refused, no route, a
// timeout) from an answer it gave.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
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
