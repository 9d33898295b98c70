package store_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/store/storetest"
)

// Every backend runs the same conformance suite (pkg/store/storetest); the
// Redis ones add the seen-set format check.

func TestScanChunk(t *testing.T) {
	if store.ScanChunk != storetest.ScanChunk {
		t.Errorf("Scan hands out %d fingerprints at a time; the suite expects at most %d", store.ScanChunk, storetest.ScanChunk)
	}
}

func TestBolt(t *testing.T) { storetest.Run(t, store.BoltBackend) }

// runRedis runs the suite and the Redis-only checks on a Redis backend.
func runRedis(t *testing.T, b storetest.Backend) {
	storetest.Run(t, b)
	t.Run("SeenFormat", func(t *testing.T) { store.SeenFormat(t, b(t)) })
}

func TestRedis(t *testing.T) {
	runRedis(t, store.RedisBackend([]string{store.RedisAddr(t)}, false))
}

// TestMiniredis runs the suite on an in-process miniredis: the fallback of
// the Redis tests when no Redis answers, and its Lua (gopher-lua) is not
// Redis's.
func TestMiniredis(t *testing.T) {
	runRedis(t, store.RedisBackend([]string{miniredis.RunT(t).Addr()}, false, store.WithReadTimeout(time.Minute)))
}

// TestRing runs the suite on a client-side Ring of two throwaway Redis
// servers and checks that every key of a partition lands on one shard.
func TestRing(t *testing.T) {
	addrs := []string{testredis.StartServer(t), testredis.StartServer(t)}
	runRedis(t, store.RedisBackend(addrs, false))
	t.Run("PartitionOnOneShard", func(t *testing.T) { store.CheckPlacement(t, addrs, false, 16) })
}

// TestCluster runs the suite on a 3-master Redis Cluster: every script and
// pipeline must respect slot rules, and partitions must spread over nodes.
func TestCluster(t *testing.T) {
	addrs := testredis.StartCluster(t, 3)
	runRedis(t, store.RedisBackend(addrs, true))
	t.Run("PartitionOnOneNode", func(t *testing.T) { store.CheckPlacement(t, addrs, true, 48) })
}
