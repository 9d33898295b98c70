package testbus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// StartMaxPayload is Start on a server whose max_payload is maxPayload
// bytes (an external server's default is 1 MiB, the embedded one's
// bus.EmbeddedMaxPayload), for tests of what does not fit.
func StartMaxPayload(t testing.TB, partitions int, maxPayload int32) (jetstream.JetStream, subjects.Names) {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		ServerName: "testbus", JetStream: true, StoreDir: t.TempDir(), MaxPayload: maxPayload,
		NoSigs: true, NoLog: true, DontListen: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := bus.ConnectEmbedded(ns, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := subjects.New("test")
	topo := bus.Topology{Names: names, Partitions: partitions, DedupWindow: time.Minute, FetchAck: 30 * time.Second}
	if err := topo.Ensure(context.Background(), js); err != nil {
		t.Fatal(err)
	}
	return js, names
}
