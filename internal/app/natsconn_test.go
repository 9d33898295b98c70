package app_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
)

// Issue 19 #8: run --nats-listen with --nats-token exposes an embedded
// server that refuses clients without the token (status and tap connect
// with the same setting, through app.NATSOptions), and is not warned
// about on loopback.
func TestEmbeddedListenWithTokenRefusesStrangers(t *testing.T) {
	cfg := testConfig(t, nil)
	cfg.NATSToken = "listen-s3cret"
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(testredis.FreePort(t)))
	var logs testutil.SyncBuffer // the server logs from its own goroutines
	d, err := app.OpenEmbedded(context.Background(), cfg, listen, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	url := "nats://" + listen
	if nc, err := bus.Connect(url, t.Name(), bus.ConnectOptions{}); err == nil {
		nc.Close()
		t.Error("a client without the token connected")
	}
	wrong := app.NATSOptions(cfg)
	wrong.Token = "guess"
	if nc, err := bus.Connect(url, t.Name(), wrong); err == nil {
		nc.Close()
		t.Error("a client with the wrong token connected")
	}
	nc, err := bus.Connect(url, t.Name(), app.NATSOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if strings.Contains(logs.String(), "accepts anyone") {
		t.Errorf("warned about a loopback listener with a token:\n%s", logs.String())
	}
}
