package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/internal/testredis"
)

// opener opens a test's store; calling it again after Close reopens the same
// data (bolt: the same file; redis: a new client on the same prefix).
type opener = func() Store

// backend makes an empty, isolated store namespace for one test.
type backend = func(t testing.TB) opener

func boltBackend(t testing.TB) opener {
	path := filepath.Join(t.TempDir(), "trawler.db")
	return func() Store {
		s, err := OpenBolt(path)
		if err != nil {
			t.Fatalf("OpenBolt: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// redisBackend isolates each test under a random prefix and deletes its
// keys afterwards. Several addrs make a Ring.
func redisBackend(addrs []string) backend { return redisBackendMode(addrs, false) }

// redisBackendMode is redisBackend, optionally against Redis Cluster.
func redisBackendMode(addrs []string, cluster bool, opts ...RedisOption) backend {
	return func(t testing.TB) opener {
		prefix := randomPrefix(t)
		t.Cleanup(func() { deleteKeys(t, addrs, prefix) })
		return func() Store {
			s, err := OpenRedis(context.Background(), addrs, cluster, prefix, opts...)
			if err != nil {
				t.Fatalf("OpenRedis: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
}

func randomPrefix(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "trawlertest-" + hex.EncodeToString(b[:])
}

// deleteKeys removes every key of a test prefix from every shard.
func deleteKeys(t testing.TB, addrs []string, prefix string) {
	ctx := context.Background()
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		keys, err := scanKeys(ctx, c, prefix)
		if err == nil && len(keys) > 0 {
			// One DEL per key: a multi-key DEL fails across Cluster slots.
			_, err = c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for _, k := range keys {
					pipe.Del(ctx, k)
				}
				return nil
			})
		}
		if err != nil {
			t.Errorf("cleanup of %s on %s: %v", prefix, addr, err)
		}
		c.Close()
	}
}

func scanKeys(ctx context.Context, c *redis.Client, prefix string) ([]string, error) {
	var keys []string
	iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

// redisAddr picks the Redis the tests run against (testredis.AddrOrStandIn).
func redisAddr(t testing.TB) string { return testredis.AddrOrStandIn(t) }

// withReadTimeout raises the client's read timeout: miniredis runs the
// store's Lua in an interpreted VM, and under the race detector on a busy
// machine one script over 10,000 fingerprints took longer than go-redis's
// 3 s (TestMiniredis/ScanCount failed so in CI).
func withReadTimeout(d time.Duration) RedisOption {
	return func(c *redisConn) { c.readTimeout = d }
}
