// Package testredis finds the Redis that tests and benchmarks use and
// cleans up after them.
package testredis

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr returns REDIS_ADDR (default 127.0.0.1:6379), or skips tb when
// nothing listens there.
func Addr(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		tb.Skipf("no Redis at %s: %v", addr, err)
	}
	c.Close()
	return addr
}

// Drop deletes every key under prefix (prefix:*), in batches.
func Drop(addr, prefix string) {
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	ctx := context.Background()
	iter := rc.Scan(ctx, 0, prefix+":*", 10000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			rc.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		rc.Unlink(ctx, keys...)
	}
}
