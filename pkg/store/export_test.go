package store

import (
	"testing"
	"time"
)

// What conformance_test.go (package store_test, which imports
// pkg/store/storetest) needs of this package's test helpers.

// ScanChunk is the chunk bound of Scan in both stores.
const ScanChunk = scanChunk

// BoltBackend makes a bbolt store in a temporary directory per test.
func BoltBackend(t testing.TB) func() Store { return boltBackend(t) }

// RedisBackend isolates each test under a random prefix of the Redis at
// addrs (a Ring when several, or a Cluster) and deletes its keys afterwards.
func RedisBackend(addrs []string, cluster bool, opts ...RedisOption) func(testing.TB) func() Store {
	return redisBackendMode(addrs, cluster, opts...)
}

// RedisAddr is the Redis the tests run against (redisAddr).
func RedisAddr(t testing.TB) string { return redisAddr(t) }

// WithReadTimeout raises the Redis client's read timeout (withReadTimeout).
func WithReadTimeout(d time.Duration) RedisOption { return withReadTimeout(d) }

// CheckPlacement checks that every key of a partition sits on one shard.
func CheckPlacement(t *testing.T, addrs []string, cluster bool, parts int) {
	checkPlacement(t, addrs, cluster, parts)
}

// SeenFormat checks that a Redis seen set of another layout is refused: the
// Redis stores' test beside the suite.
func SeenFormat(t *testing.T, open func() Store) { testSeenFormat(t, open) }
