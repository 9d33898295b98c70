package app_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/pkg/config"
)

// OpenCluster hands --redis-password (here from TRAWLER_REDIS_PASSWORD, as
// the Helm chart sets it from a Secret) to every Redis connection.
func TestOpenClusterRedisPassword(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TRAWLER_CI") != "" {
			t.Fatal("redis-server not found in CI")
		}
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--requirepass", "s3cret")
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not come up")
		}
	}
	ns := startNATS(t, t.TempDir(), 0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(env ...string) error {
		for i := 0; i+1 < len(env); i += 2 {
			t.Setenv(env[i], env[i+1])
		}
		var cfg config.Config
		if err := cfg.Parse(flag.NewFlagSet("test", flag.ContinueOnError), []string{"--nats", ns.ClientURL(), "--redis", addr, "--partition-count", "2"}); err != nil {
			t.Fatal(err)
		}
		d, err := app.OpenCluster(context.Background(), cfg, true, t.Name(), log)
		if err == nil {
			d.Close()
		}
		return err
	}
	if err := open("TRAWLER_REDIS_PASSWORD", ""); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("without the password: %v, want NOAUTH", err)
	}
	if err := open("TRAWLER_REDIS_PASSWORD", "s3cret"); err != nil {
		t.Fatalf("with the password: %v", err)
	}
}
