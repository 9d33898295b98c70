// Package heartbeat lets every Trawler process announce itself and its
// counters in a JetStream key-value bucket, so `trawler status` can show
// which replicas are alive and crawl-wide rates without scraping each one.
//
// Each process puts one entry, keyed by service and replica, every interval:
// its Prometheus counters and gauges (flattened, per-host series left out),
// their rates over the last interval, and, from a process that holds the
// frontier store, the store's totals. The bucket's TTL drops the entries of
// processes that died; a reader also treats an entry older than three of its
// intervals as gone.
package heartbeat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// TTL is how long the bucket keeps an entry that is not renewed.
const TTL = 30 * time.Second

// DefaultEvery is the interval between two beats of a service.
const DefaultEvery = 5 * time.Second

// Beat is one process's entry.
type Beat struct {
	Service  string             `json:"service"`  // the subcommand: fetcher, parser, dedup, frontier, archive or run
	Services []string           `json:"services"` // the services the process runs (run: all four)
	Replica  string             `json:"replica"`  // host, pid and a random token
	Host     string             `json:"host"`
	PID      int                `json:"pid"`
	Started  time.Time          `json:"started"`
	At       time.Time          `json:"at"`
	Every    time.Duration      `json:"every_ns"`
	Counters map[string]float64 `json:"counters"` // metric{label="v"} -> value
	Rates    map[string]float64 `json:"rates"`    // per second over the last interval, counters only
	Store    *store.Stats       `json:"store,omitempty"`
}

// Alive reports whether the beat is recent enough to trust at now.
func (b Beat) Alive(now time.Time) bool {
	return now.Sub(b.At) <= 3*max(b.Every, time.Second)
}

// Bucket is the key-value bucket of a crawl's heartbeats: the crawl's stream
// name fragment (as in <PREFIX>_PAGES) with _HEARTBEATS.
func Bucket(names subjects.Names) string {
	return strings.TrimSuffix(names.StreamDLQ(), "_DLQ") + "_HEARTBEATS"
}

// Options configure a heartbeat.
type Options struct {
	JS       jetstream.JetStream
	Names    subjects.Names
	Service  string
	Services []string
	Gatherer prometheus.Gatherer // the process's registry
	Every    time.Duration       // default DefaultEvery
	// StoreStats, when set, adds the frontier store's totals to each beat.
	StoreStats func(ctx context.Context) (store.Stats, error)
	Log        *slog.Logger
}

func open(ctx context.Context, js jetstream.JetStream, names subjects.Names) (jetstream.KeyValue, error) {
	kv, err := bus.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: Bucket(names), Description: "Trawler heartbeats: replicas alive and their counters",
		TTL: TTL, History: 1, Storage: jetstream.MemoryStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat bucket %s: %w", Bucket(names), err)
	}
	return kv, nil
}

// Start creates the bucket, puts a first beat and keeps beating until ctx
// ends, when it deletes its entry (a clean stop is not a death).
func Start(ctx context.Context, o Options) error {
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	kv, err := open(ctx, o.JS, o.Names)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	var r [3]byte
	_, _ = rand.Read(r[:])
	b := &beater{o: o, kv: kv, beat: Beat{
		Service: o.Service, Services: o.Services, Host: host, PID: os.Getpid(), Started: time.Now().UTC(), Every: o.Every,
		Replica: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(r[:])),
	}}
	if err := b.put(ctx); err != nil {
		return err
	}
	go b.loop(ctx)
	return nil
}

type beater struct {
	o    Options
	kv   jetstream.KeyValue
	beat Beat
}

// key is service.replica with the characters a KV key allows.
func (b *beater) key() string { return keyPart(b.beat.Service) + "." + keyPart(b.beat.Replica) }

func keyPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func (b *beater) loop(ctx context.Context) {
	t := time.NewTicker(b.o.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = b.kv.Delete(dctx, b.key())
			cancel()
			return
		case <-t.C:
			if err := b.put(ctx); err != nil && ctx.Err() == nil {
				b.o.Log.Warn("heartbeat", "err", err)
			}
		}
	}
}

// put gathers the counters, computes rates against the previous beat and
// writes the entry.
func (b *beater) put(ctx context.Context) error {
	now := time.Now().UTC()
	counters, kinds := Flatten(b.o.Gatherer)
	rates := map[string]float64{}
	if prev := b.beat.Counters; prev != nil {
		if dt := now.Sub(b.beat.At).Seconds(); dt > 0 {
			for k, v := range counters {
				if kinds[k] == dto.MetricType_COUNTER {
					if p, ok := prev[k]; ok && v >= p {
						rates[k] = (v - p) / dt
					}
				}
			}
		}
	}
	b.beat.At, b.beat.Counters, b.beat.Rates = now, counters, rates
	if b.o.StoreStats != nil {
		if st, err := b.o.StoreStats(ctx); err == nil {
			b.beat.Store = &st
		}
	}
	data, err := json.Marshal(b.beat)
	if err != nil {
		return err
	}
	_, err = b.kv.Put(ctx, b.key(), data)
	return err
}

// maxSeries bounds the series one beat carries.
const maxSeries = 500

// Flatten reads the trawler_* counters and gauges of g into name{labels}
// keys, leaving out per-host series (unbounded in number).
func Flatten(g prometheus.Gatherer) (map[string]float64, map[string]dto.MetricType) {
	out := map[string]float64{}
	kinds := map[string]dto.MetricType{}
	if g == nil {
		return out, kinds
	}
	fams, _ := g.Gather() // a collector's error leaves the others usable
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "trawler_") {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			default:
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "host" {
					continue metrics
				}
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			if len(out) < maxSeries {
				out[key], kinds[key] = v, f.GetType()
			}
		}
	}
	return out, kinds
}

// List reads every entry of the bucket, newest first; a crawl whose
// processes never beat has none.
func List(ctx context.Context, js jetstream.JetStream, names subjects.Names) ([]Beat, error) {
	kv, err := js.KeyValue(ctx, Bucket(names))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Beat
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // expired between Keys and Get
		}
		var b Beat
		if json.Unmarshal(e.Value(), &b) == nil {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	return out, nil
}
