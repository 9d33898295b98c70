package app_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testredis"
)

// OpenCluster hands --redis-password (here from TRAWLER_REDIS_PASSWORD, as
// the Helm chart sets it from a Secret) to every Redis connection.
func TestOpenClusterRedisPassword(t *testing.T) {
	port := testredis.FreePort(t)
	addr := testredis.StartRaw(t, port, "--port", strconv.Itoa(port), "--requirepass", "s3cret")
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
