package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// preload queues perHost URLs for each of hosts hosts straight into the
// store, spread over partitions by host as the dedup service would.
func preload(tb testing.TB, st store.Store, parts, hosts, perHost int) {
	for p := range parts {
		preloadPartition(tb, st, p, parts, hosts, perHost)
	}
}

// preloadPartition queues the URLs of preload that fall in partition p.
func preloadPartition(tb testing.TB, st store.Store, p, parts, hosts, perHost int) {
	ctx := context.Background()
	var mine []string
	for h := range hosts {
		if host := fmt.Sprintf("host%06d.example", h); urlx.Partition(host, parts) == p {
			mine = append(mine, host)
		}
	}
	seq := uint64(0)
	var batch []store.Queued
	flush := func() {
		if len(batch) == 0 {
			return
		}
		seq++
		if _, err := st.Apply(ctx, p, seq, batch, nil); err != nil {
			tb.Error(err)
		}
		batch = batch[:0]
	}
	for i := range perHost {
		for _, host := range mine {
			batch = append(batch, store.Queued{Host: host, Link: messages.Link{
				URL: fmt.Sprintf("http://%s/section/%d/page-%d.html", host, i%17, i), Depth: 1 + i/50}})
			if len(batch) == 1000 {
				flush()
			}
		}
	}
	flush()
}

// BenchmarkDispatch measures fetch tasks issued per second by one frontier
// replica when every host is always due (delay 0, factor 0): a stand-in
// fetcher in the same process answers each task with a done message at once,
// so the loop is intake of done messages, pop from the store, publish of the
// task. Run for the embedded bbolt store and the machine's Redis in the same
// run; the Redis row is the figure (goal: 10,000 tasks/s).
//
// tasks/s counts the steady state: the b.N tasks after every host's first
// (the partitions' load, timed apart as start-s). Counted from the start, a
// run of a second at 20,000 hosts timed mostly the load and the first
// issue of every host, and b.N decided the figure (docs/benchmarks.md,
// "2,000 and 20,000 due hosts").
func BenchmarkDispatch(b *testing.B) {
	for _, backend := range []string{"bolt", "redis"} {
		for _, hosts := range []int{2000, 20000} {
			b.Run(fmt.Sprintf("%s/hosts=%d", backend, hosts), func(b *testing.B) {
				benchDispatch(b, backend, hosts)
			})
		}
	}
}

func benchDispatch(b *testing.B, backend string, hosts int) {
	const parts = 8
	js, names := testbus.Start(b, parts)
	var st store.Store
	switch backend {
	case "bolt":
		bs, err := store.OpenBolt(filepath.Join(b.TempDir(), "store.db"))
		if err != nil {
			b.Fatal(err)
		}
		st = bs
	case "redis":
		addr := testredis.Addr(b)
		prefix := fmt.Sprintf("fbench%08x", rand.Uint32())
		rs, err := store.OpenRedis(context.Background(), []string{addr}, false, prefix)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { testredis.Drop(addr, prefix) })
		st = rs
	}
	defer st.Close()
	perHost := b.N/hosts + 2 // every host's first task, then b.N more
	preload(b, st, parts, hosts, perHost)
	all := make([]int, parts)
	for i := range all {
		all[i] = i
	}
	svc := New(Options{JS: js, Names: names, Store: st, Partitions: all, FetchTimeout: 30 * time.Second,
		MaxAttempts: 3, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	// Deferred after st.Close, so it runs first: the service stops using the
	// store before the store closes under it.
	defer func() { cancel(); <-stopped }()

	// The benchmark's clock runs for the steady state only, so that b.N
	// grows past the hosts' first tasks.
	b.ResetTimer()
	b.StopTimer()
	launched := time.Now()
	var start time.Time
	go func() { defer close(stopped); _ = svc.Run(ctx) }()
	answer(b, ctx, js, names.StreamFetch(), names.ConsumerFetcher(), func(t messages.FetchTask) *nats.Msg {
		data, _ := json.Marshal(messages.FetchDone{V: 1, TaskID: t.ID, Partition: t.Partition, Host: t.Host, URL: t.URL, Status: 200})
		m := nats.NewMsg(names.FrontierDone(t.Partition))
		m.Data = data
		m.Header.Set(messages.HeaderKind, "done")
		return m
	}, hosts, func() { start = time.Now(); b.StartTimer() }, hosts+b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(start.Sub(launched).Seconds(), "start-s")
	b.ReportMetric(0, "ns/op")
}

// answer consumes n fetch tasks and publishes reply(task) for each; warmed
// runs once the first warm tasks have been answered.
func answer(b *testing.B, ctx context.Context, js jetstream.JetStream, stream, durable string, reply func(messages.FetchTask) *nats.Msg, warm int, warmed func(), n int) {
	cons, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		b.Fatal(err)
	}
	got := 0
	for got < n {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for m := range batch.Messages() {
			var t messages.FetchTask
			if err := messages.Decode(m.Data(), &t); err != nil {
				b.Fatal(err)
			}
			if _, err := js.PublishMsgAsync(reply(t)); err != nil {
				b.Fatal(err)
			}
			_ = m.Ack()
			k++
			if got+k == warm {
				warmed()
			}
		}
		if k == 0 {
			b.Fatalf("no task for 5s after %d of %d", got, n)
		}
		got += k
	}
	<-js.PublishAsyncComplete()
}
