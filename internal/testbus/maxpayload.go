package testbus

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

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
	return connect(t, ns, partitions)
}
