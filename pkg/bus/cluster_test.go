package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// On a 3-node cluster, --replicas 3 gives every stream and bucket three
// replicas, and the work streams keep serving while a node is down.
func TestReplicatedTopologySurvivesANode(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	cluster := testbus.StartCluster(t, 3)
	nc, err := nats.Connect(cluster.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	raw, _ := jetstream.New(nc)
	js := bus.WithReplicas(raw, 3)
	names, _ := subjects.New("rt")
	topo := bus.Topology{Names: names, Partitions: 2, DedupWindow: time.Minute, FetchAck: 30 * time.Second}
	// Generous: CI runs this beside the -race suite on two cores, and a
	// cluster elects leaders slowly under that load.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The meta leader is elected some time after the servers start.
	testutil.CheckFor(t, 4*time.Minute, 200*time.Millisecond, func() error {
		attempt, stop := context.WithTimeout(ctx, 5*time.Second)
		defer stop()
		return topo.Ensure(attempt, js)
	})
	st, err := js.Stream(ctx, names.StreamFetch())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("fetch stream: replicas %d, cluster %+v; want 3 replicas", info.Config.Replicas, info.Cluster)
	}
	kv, err := bus.KeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: names.OwnersBucket()})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := kv.Status(ctx); err != nil || s.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatalf("bucket status %v, %v; want 3 replicas", s, err)
	}

	// Take down the node that leads the fetch stream: publishing and
	// consuming go on once a new leader is elected.
	cluster.Stop(cluster.Index(info.Cluster.Leader))
	// Each attempt gets its own short deadline: a publish sent while the
	// stream has no leader is never answered, and would otherwise wait
	// for the whole test's context.
	testutil.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		attempt, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		if _, err := js.Publish(attempt, names.Fetch(0), []byte("task"), jetstream.WithMsgID("survivor")); err != nil {
			return fmt.Errorf("publish with a node down: %w", err)
		}
		return nil
	})
	var m jetstream.Msg
	testutil.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		attempt, stop := context.WithTimeout(ctx, 5*time.Second)
		cons, err := js.Consumer(attempt, names.StreamFetch(), names.ConsumerFetcher())
		stop()
		if err == nil {
			m, err = cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		}
		if err != nil {
			return fmt.Errorf("consume with a node down: %w", err)
		}
		return nil
	})
	if string(m.Data()) != "task" {
		t.Fatalf("consumed %q, want task", m.Data())
	}
	_ = m.Ack()
}
