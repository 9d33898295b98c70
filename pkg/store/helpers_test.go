package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// opener opens a test's store; calling it again after Close reopens the same
// data (bolt: the same file; redis: a new client on the same prefix).
type opener func() Store

// backend makes an empty, isolated store namespace for one test.
type backend func(t testing.TB) opener

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
func redisBackendMode(addrs []string, cluster bool) backend {
	return func(t testing.TB) opener {
		prefix := randomPrefix(t)
		t.Cleanup(func() { deleteKeys(t, addrs, prefix) })
		return func() Store {
			s, err := OpenRedis(context.Background(), addrs, cluster, prefix)
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

var localRedis struct {
	once sync.Once
	ok   bool
}

const localRedisAddr = "127.0.0.1:6379"

// redisAddr picks the Redis the tests run against: $REDIS_ADDR when set
// (which must then be reachable), else a local Redis on the default port,
// else an in-process miniredis.
func redisAddr(t testing.TB) string {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		if err := pingAddr(addr); err != nil {
			t.Fatalf("REDIS_ADDR=%s is set but unreachable: %v", addr, err)
		}
		return addr
	}
	localRedis.once.Do(func() { localRedis.ok = pingAddr(localRedisAddr) == nil })
	if localRedis.ok {
		return localRedisAddr
	}
	t.Logf("no $REDIS_ADDR and no Redis at %s: falling back to miniredis", localRedisAddr)
	return miniredis.RunT(t).Addr()
}

func pingAddr(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// needBinary returns the path of a program the test needs. When it is
// missing the test is skipped, or fails when $TRAWLER_CI is set (CI must run
// every backend).
func needBinary(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("TRAWLER_CI") != "" {
			t.Fatalf("%s not installed (required when TRAWLER_CI is set)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return bin
}

// startRedisServer runs a throwaway redis-server on a free port; the test is
// skipped when the binary is missing (failed under $TRAWLER_CI).
func startRedisServer(t *testing.T, extra ...string) string {
	t.Helper()
	return startRedisServerOn(t, freePort(t), extra...)
}

func startRedisServerOn(t *testing.T, port int, extra ...string) string {
	t.Helper()
	bin := needBinary(t, "redis-server")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{"--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(5 * time.Second)
	for pingAddr(addr) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not come up:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr
}

// syncBuffer is a bytes.Buffer safe for the child's writes and our reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freeClusterPort is a free port whose cluster bus port (+10000) is free too.
func freeClusterPort(t *testing.T) int {
	for range 100 {
		p := freePort(t)
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

// startRedisCluster runs a Redis Cluster of n masters (no replicas) on
// loopback, created with redis-cli --cluster create, and returns the node
// addresses once every node reports the cluster ok. Skipped when
// redis-server or redis-cli is missing (failed under $TRAWLER_CI).
func startRedisCluster(t *testing.T, n int) []string {
	t.Helper()
	cli := needBinary(t, "redis-cli")
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = startRedisServerOn(t, freeClusterPort(t),
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_slots_assigned:16384") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("cluster node %s not ok: %v\n%s", addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return addrs
}
