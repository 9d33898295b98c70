package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// Poison on every work subject goes to the dead-letter subjects with a
// reason, and the crawl around it completes.
func TestPoisonMessagesAreDeadLetteredAndCrawlGoesOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newFixture(t)
	cfg := clusterConfig(t, f.seeds)
	d, err := app.OpenCluster(ctx, cfg, true, "test-poison", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	poison := []struct {
		subject string
		header  map[string]string
		data    string
	}{
		{d.Names.Discovered(0), nil, "not json"},
		{d.Names.Discovered(1), nil, `{"v":99,"links":[]}`},
		{d.Names.FrontierNew(2), map[string]string{messages.HeaderKind: "new"}, `{"v":1,"links":[{"url":`},
		{d.Names.FrontierDone(3), map[string]string{messages.HeaderKind: "something"}, `{}`},
		{d.Names.Fetch(4), nil, `{"v":1,"id":"x"}`},
		{d.Names.PagesFetched(), nil, "<html>a page without metadata</html>"},
	}
	for _, p := range poison {
		m := nats.NewMsg(p.subject)
		m.Data = []byte(p.data)
		for k, v := range p.header {
			m.Header.Set(k, v)
		}
		if _, err := d.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	stop := startServices(t, ctx, cfg)
	seedAndWait(t, ctx, cfg)
	stop()
	assertFetchedOnce(t, f.site, f.expected())

	st, err := d.JS.Stream(ctx, d.Names.StreamDLQ())
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]messages.DeadLetter{}
	for range poison {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("dead letters: got %d of %d: %v", len(got), len(poison), err)
		}
		var dl messages.DeadLetter
		if err := json.Unmarshal(m.Data(), &dl); err != nil {
			t.Fatal(err)
		}
		got[dl.Subject] = dl
	}
	for _, p := range poison {
		dl, ok := got[p.subject]
		if !ok {
			t.Errorf("no dead letter for %s", p.subject)
			continue
		}
		if dl.Reason == "" || string(dl.Data) != p.data || dl.Service == "" {
			t.Errorf("dead letter for %s: %+v", p.subject, dl)
		}
		t.Logf("%s -> %s: %s", p.subject, dl.Service, dl.Reason)
	}
	if dl := got[d.Names.Discovered(1)]; !strings.Contains(dl.Reason, "version") {
		t.Errorf("wrong-version reason = %q", dl.Reason)
	}
	all, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	w := &crawlstate.Watcher{JS: d.JS, Names: d.Names, Store: d.Store, Partitions: all}
	if s, err := w.Snapshot(ctx); err != nil || s.DeadLetters != uint64(len(poison)) || !s.Idle() {
		t.Errorf("snapshot %+v, %v: want %d dead letters and idle", s, err, len(poison))
	}
}
