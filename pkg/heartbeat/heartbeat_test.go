package heartbeat

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/store"
)

func TestBeatsCarryCountersRatesAndStore(t *testing.T) {
	js, names := testbus.Start(t, 1)
	reg := prometheus.NewRegistry()
	var pages atomic.Int64
	bus.RegisterCounters(reg, "fetcher", bus.Counter{Name: "pages_total", Help: "x", Value: &pages})
	byClass := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trawler_fetcher_responses_total", Help: "x"}, []string{"class"})
	perHost := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trawler_fetcher_host_total", Help: "x"}, []string{"host"})
	reg.MustRegister(byClass, perHost)
	byClass.WithLabelValues("2xx").Add(3)
	perHost.WithLabelValues("example.org").Inc()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Start(ctx, Options{JS: js, Names: names, Service: "fetcher", Services: []string{"fetcher"}, Gatherer: reg,
		Every: 100 * time.Millisecond, StoreStats: func(context.Context) (store.Stats, error) { return store.Stats{Queued: 7}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	pages.Add(10)
	var b Beat
	testutil.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		beats, err := List(ctx, js, names)
		if err != nil {
			return err
		}
		if len(beats) != 1 || beats[0].Rates["trawler_fetcher_pages_total"] <= 0 {
			return fmt.Errorf("no beat with a page rate yet: %+v", beats)
		}
		b = beats[0]
		return nil
	})
	if b.Service != "fetcher" || !b.Alive(time.Now()) || b.Store == nil || b.Store.Queued != 7 {
		t.Fatalf("beat %+v", b)
	}
	if b.Counters["trawler_fetcher_pages_total"] != 10 || b.Counters[`trawler_fetcher_responses_total{class="2xx"}`] != 3 {
		t.Errorf("counters %v", b.Counters)
	}
	for k := range b.Counters {
		if k == `trawler_fetcher_host_total{host="example.org"}` {
			t.Errorf("per-host series %s travelled in the beat", k)
		}
	}
	// 10 pages within one interval of about 100ms: roughly 100/s; only
	// check it is a rate, not a total.
	if r := b.Rates["trawler_fetcher_pages_total"]; r <= 10 {
		t.Errorf("rate %v/s for 10 pages in ~100ms", r)
	}
	if b.Alive(b.At.Add(time.Hour)) {
		t.Error("an hour-old beat counts as alive")
	}
	cancel() // a clean stop removes the entry
	testutil.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if beats, _ := List(context.Background(), js, names); len(beats) != 0 {
			return fmt.Errorf("entry still there after stop: %+v", beats)
		}
		return nil
	})
}
