package testredis

import (
	"os"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

const localAddr = "127.0.0.1:6379"

var local struct {
	once sync.Once
	ok   bool
}

// AddrOrStandIn picks the Redis a test runs against: $REDIS_ADDR when set
// (which must then answer: CI sets it), else a Redis on the default local
// port, else an in-process miniredis for tb (a machine with Go alone).
func AddrOrStandIn(tb testing.TB) string {
	tb.Helper()
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		if err := Ping(addr); err != nil {
			tb.Fatalf("REDIS_ADDR=%s is set but unreachable: %v", addr, err)
		}
		return addr
	}
	local.once.Do(func() { local.ok = Ping(localAddr) == nil })
	if local.ok {
		return localAddr
	}
	tb.Logf("no $REDIS_ADDR and no Redis at %s: falling back to miniredis", localAddr)
	return miniredis.RunT(tb).Addr()
}
