package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Ensure leaves a topology that is already in place alone: every stream
// and consumer, as the server reports it back, compares equal to what the
// topology asks for, so a restarted service sends no update.
func TestEnsureRecognisesItsOwnTopology(t *testing.T) {
	js, names := embeddedJS(t)
	topo := Topology{Names: names, Partitions: 3, DedupWindow: time.Minute, FetchAck: 30 * time.Second}
	ctx := context.Background()
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	for _, want := range topo.streams() {
		s, err := js.Stream(ctx, want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if have := s.CachedInfo().Config; !sameStream(have, want) {
			t.Errorf("stream %s: server has %+v, topology wants %+v", want.Name, have, want)
		}
	}
	for stream, ccs := range topo.consumers() {
		for _, want := range ccs {
			c, err := js.Consumer(ctx, stream, want.Durable)
			if err != nil {
				t.Fatal(err)
			}
			if have := c.CachedInfo().Config; !sameConsumer(have, want) {
				t.Errorf("consumer %s: server has %+v, topology wants %+v", want.Durable, have, want)
			}
		}
	}
	// Link batches keep their message IDs a short while; the other work
	// streams the crawl's --dedup-window.
	for _, sc := range topo.streams() {
		want := topo.DedupWindow
		if sc.Name == names.StreamDiscovered() {
			want = DiscoveredDedupWindow
		}
		if s, _ := js.Stream(ctx, sc.Name); sc.Retention == jetstream.WorkQueuePolicy && s.CachedInfo().Config.Duplicates != want {
			t.Errorf("stream %s: duplicate window %s, want %s", sc.Name, s.CachedInfo().Config.Duplicates, want)
		}
	}
	// A changed setting is not the same.
	want := topo.streams()[0]
	want.Duplicates = 2 * time.Minute
	s, _ := js.Stream(ctx, want.Name)
	if sameStream(s.CachedInfo().Config, want) {
		t.Error("a changed duplicate window compares equal")
	}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
}

// A work queue's consumer made on file by an earlier version stays there:
// Ensure updates its other settings without asking for another storage,
// which the server refuses.
func TestEnsureKeepsAConsumerOnFile(t *testing.T) {
	js, names := embeddedJS(t)
	ctx := context.Background()
	topo := Topology{Names: names, Partitions: 1, DedupWindow: time.Minute, FetchAck: 30 * time.Second}
	for _, sc := range topo.streams() {
		if _, err := js.CreateStream(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	old := topo.consumers()[names.StreamFetch()][0]
	old.MemoryStorage, old.AckWait = false, 20*time.Second
	if _, err := js.CreateConsumer(ctx, names.StreamFetch(), old); err != nil {
		t.Fatal(err)
	}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure over a consumer on file: %v", err)
	}
	c, err := js.Consumer(ctx, names.StreamFetch(), old.Durable)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.CachedInfo().Config; cfg.MemoryStorage || cfg.AckWait != 30*time.Second {
		t.Fatalf("after Ensure: memory storage %v, ack wait %v; want on file, 30s", cfg.MemoryStorage, cfg.AckWait)
	}
	c, err = js.Consumer(ctx, names.StreamFrontier(), names.ConsumerFrontier(0))
	if err != nil {
		t.Fatal(err)
	}
	if !c.CachedInfo().Config.MemoryStorage {
		t.Fatal("a new frontier consumer keeps its state on file")
	}
}

// With ParsedInterest, pages.parsed keeps a document only until its durable
// consumers acked it, stores none while it has no consumer, and a stream
// created with limits retention (a data dir of an older run) is switched
// over by Ensure.
func TestParsedInterestRetention(t *testing.T) {
	js, names := embeddedJS(t)
	ctx := context.Background()
	topo := Topology{Names: names, Partitions: 1, DedupWindow: time.Minute, FetchAck: 30 * time.Second}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	topo.ParsedInterest = true
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, names.StreamParsed())
	if err != nil {
		t.Fatal(err)
	}
	if c := s.CachedInfo().Config; c.Retention != jetstream.InterestPolicy || c.Compression != jetstream.NoCompression {
		t.Fatalf("parsed stream after Ensure: retention %v, compression %v", c.Retention, c.Compression)
	}
	count := func() uint64 {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	if _, err := js.Publish(ctx, names.PagesParsed(), []byte(`{"url":"http://a.test/"}`)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d documents kept with no consumer", n)
	}
	c, err := js.CreateOrUpdateConsumer(ctx, names.StreamParsed(), jetstream.ConsumerConfig{Durable: "out", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, names.PagesParsed(), []byte(`{"url":"http://b.test/"}`)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d documents kept for a consumer that has not read it, want 1", n)
	}
	msgs, err := c.Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range msgs.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("%d documents kept after the ack", n)
	}
}

// embeddedJS starts an embedded server for t and returns a client of it and
// the names of a crawl with prefix "topo"; all is shut down with t.
func embeddedJS(t *testing.T) (jetstream.JetStream, subjects.Names) {
	t.Helper()
	return embeddedJSIn(t, t.TempDir())
}

// embeddedJSIn is embeddedJS with the server's store in dir.
func embeddedJSIn(t *testing.T, dir string) (jetstream.JetStream, subjects.Names) {
	t.Helper()
	ns, err := StartEmbedded(EmbeddedOptions{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	nc, err := ConnectEmbedded(ns, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	names, _ := subjects.New("topo")
	return js, names
}

// Ensure makes the topology's buckets beside the streams, with their
// settings, and a second Ensure over them changes nothing.
func TestEnsureMakesItsBuckets(t *testing.T) {
	js, names := embeddedJS(t)
	ctx := context.Background()
	robots := jetstream.KeyValueConfig{Bucket: names.RobotsBucket(), TTL: time.Hour, Storage: jetstream.FileStorage}
	scope := jetstream.KeyValueConfig{Bucket: names.ScopeBucket(), Storage: jetstream.FileStorage}
	topo := Topology{Names: names, Partitions: 1, DedupWindow: time.Minute, FetchAck: 30 * time.Second,
		Buckets: []jetstream.KeyValueConfig{robots, scope}}
	for range 2 {
		if err := topo.Ensure(ctx, js); err != nil {
			t.Fatal(err)
		}
		kv, err := js.KeyValue(ctx, robots.Bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", robots.Bucket, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != time.Hour {
			t.Errorf("bucket %s: TTL %v, want 1h", robots.Bucket, st.TTL())
		}
		if _, err := js.KeyValue(ctx, scope.Bucket); err != nil {
			t.Errorf("bucket %s: %v", scope.Bucket, err)
		}
	}
}
