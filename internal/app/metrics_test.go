package app_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/store"
)

// startNATS runs a JetStream server on a loopback TCP port (port reuses a
// previous server's port when non-zero), as an external NATS would be.
func startNATS(t *testing.T, dir string, port int) *server.Server {
	t.Helper()
	if port == 0 {
		port = -1
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitStatus polls url until it answers want, or fails after 15s.
func waitStatus(t *testing.T, url string, want int) string {
	t.Helper()
	var body string
	testutil.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		var code int
		if code, body = get(t, url); code != want {
			return fmt.Errorf("%s: %d %q, want %d", url, code, body, want)
		}
		return nil
	})
	return body
}

// /readyz follows the NATS connection (down when the server goes away, up
// again when the client reconnects) and the store; /healthz stays up.
func TestHealthAndReadiness(t *testing.T) {
	natsDir := t.TempDir()
	ns := startNATS(t, natsDir, 0)
	port := ns.Addr().(*net.TCPAddr).Port
	nc, err := bus.Connect(ns.ClientURL(), t.Name(), bus.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg config.Config
	if err := cfg.Parse(flag.NewFlagSet("test", flag.ContinueOnError), []string{"--partition-count", "4", "--partitions", "1-2"}); err != nil {
		t.Fatal(err)
	}
	d := &app.Deps{Config: cfg, NC: nc, Store: st, Registry: prometheus.NewRegistry()}
	owning := errors.New("partitions 1-2 not owned yet")
	srv := httptest.NewServer(app.MetricsHandler(d, app.ReadyCheck{Name: "partitions", Check: func(context.Context) error { return owning }}))
	defer srv.Close()

	// A caller's check holds readiness back, and says why.
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "partitions: partitions 1-2 not owned yet") {
		t.Fatalf("/readyz before ownership: %d %q", code, body)
	}
	owning = nil
	waitStatus(t, srv.URL+"/readyz", http.StatusOK)
	if code, _ := get(t, srv.URL+"/metrics"); code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}

	// NATS goes away: not ready, but alive (a restart would not help).
	ns.Shutdown()
	ns.WaitForShutdown()
	if body := waitStatus(t, srv.URL+"/readyz", http.StatusServiceUnavailable); !strings.Contains(body, "nats: not connected") {
		t.Fatalf("/readyz with NATS down: %q", body)
	}
	if code, _ := get(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with NATS down: %d, want 200", code)
	}

	// The same server comes back on the same port: the client reconnects.
	startNATS(t, natsDir, port)
	waitStatus(t, srv.URL+"/readyz", http.StatusOK)

	// The store fails: not ready.
	st.Close()
	if body := waitStatus(t, srv.URL+"/readyz", http.StatusServiceUnavailable); !strings.Contains(body, "store: ") || strings.Contains(body, "nats") {
		t.Fatalf("/readyz with the store closed: %q", body)
	}
}

// Fetchers and parsers have no store: only NATS counts.
func TestReadinessWithoutStore(t *testing.T) {
	ns := startNATS(t, t.TempDir(), 0)
	nc, err := bus.Connect(ns.ClientURL(), t.Name(), bus.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	d := &app.Deps{Config: config.Config{PartitionCount: 4}, NC: nc, Registry: prometheus.NewRegistry()}
	srv := httptest.NewServer(app.MetricsHandler(d))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	nc.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "nats: not connected (status CLOSED)") {
		t.Fatalf("/readyz after close: %d %q", code, body)
	}
}
