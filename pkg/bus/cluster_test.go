package bus_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startCluster runs a 3-node JetStream cluster in this process.
func startCluster(t *testing.T) []*server.Server {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	var servers []*server.Server
	for i, p := range ports {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "trawler-test", Host: "127.0.0.1", Port: p},
			Routes:  routes,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("cluster node not ready")
		}
	}
	return servers
}

// On a 3-node cluster, --replicas 3 gives every stream and bucket three
// replicas, and the work streams keep serving while a node is down.
func TestReplicatedTopologySurvivesANode(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	servers := startCluster(t)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
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
	for {
		attempt, stop := context.WithTimeout(ctx, 5*time.Second)
		err = topo.Ensure(attempt, js)
		stop()
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
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
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			s.Shutdown()
		}
	}
	// Each attempt gets its own short deadline: a publish sent while the
	// stream has no leader is never answered, and would otherwise wait
	// for the whole test's context.
	deadline := time.Now().Add(90 * time.Second)
	for {
		attempt, stop := context.WithTimeout(ctx, 3*time.Second)
		_, err = js.Publish(attempt, names.Fetch(0), []byte("task"), jetstream.WithMsgID("survivor"))
		stop()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("publish with a node down: %v", err)
	}
	var m jetstream.Msg
	for {
		var cons jetstream.Consumer
		attempt, stop := context.WithTimeout(ctx, 5*time.Second)
		cons, err = js.Consumer(attempt, names.StreamFetch(), names.ConsumerFetcher())
		stop()
		if err == nil {
			m, err = cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil || string(m.Data()) != "task" {
		t.Fatalf("consume with a node down: %v", err)
	}
	_ = m.Ack()
}
