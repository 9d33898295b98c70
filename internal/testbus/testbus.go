// Package testbus starts an embedded JetStream server with the crawl's
// topology for service tests, as nats-server's RunBasicJetStreamServer does.
package testbus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Start runs a server on t.TempDir(), ensures the topology for partitions
// partitions and returns a JetStream client; all is shut down with t.
func Start(t testing.TB, partitions int) (jetstream.JetStream, subjects.Names) {
	t.Helper()
	ns, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, ns, partitions)
}

// connect connects to ns, ensures the topology for partitions partitions
// and shuts the connection and then ns down with t.
func connect(t testing.TB, ns *server.Server, partitions int) (jetstream.JetStream, subjects.Names) {
	t.Helper()
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

// Publish publishes data with headers (key, value pairs) or fails t.
func Publish(t testing.TB, js jetstream.JetStream, subject string, data []byte, headers ...string) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	for i := 0; i+1 < len(headers); i += 2 {
		m.Header.Set(headers[i], headers[i+1])
	}
	if _, err := js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// Next takes the next message of a durable consumer within timeout, acking
// it, or returns nil.
func Next(t testing.TB, js jetstream.JetStream, stream, durable string, timeout time.Duration) jetstream.Msg {
	t.Helper()
	c, err := js.Consumer(context.Background(), stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(timeout))
	if err != nil {
		return nil
	}
	_ = m.Ack()
	return m
}
