package store

import (
	"crypto/tls"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOption adjusts how OpenRedis connects: credentials and TLS apply to
// every node, whether one Redis, a ring of shards or a Redis Cluster.
type RedisOption func(*redisConn)

type redisConn struct {
	username, password string
	tls                *tls.Config
	readTimeout        time.Duration // 0: go-redis's (3 s); tests against the slow in-process stand-in raise it
}

// WithRedisAuth sends AUTH with password (and username for a Redis 6 ACL
// user; empty means the default user, as with requirepass).
func WithRedisAuth(username, password string) RedisOption {
	return func(c *redisConn) { c.username, c.password = username, password }
}

// WithRedisTLS connects over TLS with cfg (nil: no TLS).
func WithRedisTLS(cfg *tls.Config) RedisOption {
	return func(c *redisConn) { c.tls = cfg }
}

func newRedisConn(opts []RedisOption) redisConn {
	var c redisConn
	for _, o := range opts {
		o(&c)
	}
	return c
}

func (c redisConn) single(addr string) *redis.Options {
	return &redis.Options{Addr: addr, Username: c.username, Password: c.password, TLSConfig: c.tls, ReadTimeout: c.readTimeout}
}

func (c redisConn) cluster(addrs []string) *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: addrs, Username: c.username, Password: c.password, TLSConfig: c.tls, ReadTimeout: c.readTimeout}
}
