package testredis

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ping reports whether a Redis answers at addr within two seconds.
func Ping(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// NeedBinary returns the path of a program the test needs. When it is
// missing the test is skipped, or fails when $TRAWLER_CI is set (CI must run
// every backend).
func NeedBinary(t testing.TB, name string) string {
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

// StartServer runs a throwaway redis-server on a free port; the test is
// skipped when the binary is missing (failed under $TRAWLER_CI).
func StartServer(t testing.TB, extra ...string) string {
	t.Helper()
	return StartServerOn(t, FreePort(t), extra...)
}

// StartServerOn is StartServer on a given port.
func StartServerOn(t testing.TB, port int, extra ...string) string {
	t.Helper()
	addr := StartRaw(t, port, append([]string{"--port", strconv.Itoa(port)}, extra...)...)
	deadline := time.Now().Add(5 * time.Second)
	for Ping(addr) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s does not answer PING", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr
}

// StartRaw runs redis-server with args (which set the listening port or
// TLS port) and returns 127.0.0.1:port once it accepts TCP: PING would need
// the password or TLS a caller may be testing. It is killed when the test
// ends.
func StartRaw(t testing.TB, port int, args ...string) string {
	t.Helper()
	bin := NeedBinary(t, "redis-server")
	args = append([]string{"--save", "", "--appendonly", "no", "--bind", "127.0.0.1"}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir() // nodes.conf and any dump stay in the test's directory
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server %v did not come up:\n%s", args, out.String())
		}
	}
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

func FreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freeClusterPort is a free port whose cluster bus port (+10000) is free too.
func freeClusterPort(t testing.TB) int {
	for range 100 {
		p := FreePort(t)
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

// StartCluster runs a Redis Cluster of n masters (no replicas) on
// loopback, created with redis-cli --cluster create, and returns the node
// addresses once every node reports the cluster ok. Skipped when
// redis-server or redis-cli is missing (failed under $TRAWLER_CI).
func StartCluster(t testing.TB, n int) []string {
	t.Helper()
	cli := NeedBinary(t, "redis-cli")
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = StartServerOn(t, freeClusterPort(t),
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
