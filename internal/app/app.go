// Package app wires Trawler's services from a Config, the way Loki's module
// manager does: each service is a target with the dependencies it needs, and
// the all-in-one mode is every target over an embedded NATS and store.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/ownership"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/services/fetcher"
)

// Runner is a started-by-Run service: Run returns when ctx ends and the work
// in hand is finished.
type Runner interface {
	Run(ctx context.Context) error
}

// Deps are the connections services share.
type Deps struct {
	Config   config.Config
	Names    subjects.Names
	NC       *nats.Conn
	JS       jetstream.JetStream
	Store    store.Store // nil for processes that run neither dedup nor frontier
	Log      *slog.Logger
	Registry *prometheus.Registry

	// cluster is set by OpenCluster: stateful services without static
	// --partitions then share partitions through leases.
	cluster bool
	// member is this process's place in the ownership table, once a
	// dedup or frontier service joined it.
	member atomic.Pointer[ownership.Member]
	// closed is set by OpenEmbedded without a listener: no other process
	// can reach this NATS server, so the fetcher's per-IP table can live
	// in memory (ipgate.OpenLocal).
	closed bool
	// pagesInProcess is set by run when nothing but its parser reads
	// pages.fetched (closed, and no archive consumer, or none with pages
	// left: archiveInProcess): the fetcher hands pages to the parser in
	// process.
	pagesInProcess bool
	// archiveInProcess is set by run for --archive when the parser hands
	// the archive its pages and documents (archive.Options.Direct).
	archiveInProcess bool
	// tasks is set by run when closed: the frontier gives fetch tasks to
	// the fetcher in process (bus.Inbox) instead of the fetch stream.
	tasks *bus.Inbox
	// ended is set by the frontier: the fetcher of run tells it of a
	// fetch's end before the page is parsed (frontier.Service.Ended).
	ended func(messages.FetchDone)
	// moved is set by run: dedup and the frontier call it after each batch
	// and step, and run's end watcher asks the store at once whether the
	// crawl is over (crawlstate.Watcher.Wake).
	moved func()
	// resolver is set by run: the seeds' address check and the fetcher
	// share it (newFetcher makes one otherwise).
	resolver hostResolver

	closers []func() error
}

// automaticOwnership tells whether dedup and frontier take their partitions
// from the ownership table.
func (d *Deps) automaticOwnership() bool { return d.cluster && d.Config.Partitions == "" }

// joiner returns how service name joins the ownership table, or nil for
// static partitions.
func (d *Deps) joiner(ctx context.Context, name string) ownership.Joiner {
	if !d.automaticOwnership() {
		return nil
	}
	return func(h ownership.Handler) (*ownership.Member, error) {
		m, err := ownership.Open(ctx, d.JS, d.Names.OwnersBucket(), ownership.Options{
			Service: name, Replica: replicaID(), Partitions: d.Config.PartitionCount,
			TTL: d.Config.PartitionLeaseTTL, Log: d.Log.With("service", name),
		}, h)
		if err == nil {
			d.member.Store(m)
		}
		return m, err
	}
}

// replicaID names this process in the ownership table: the host name (a
// pod's name) and a random suffix, so a restarted pod is a new replica.
func replicaID() string {
	h, _ := os.Hostname()
	h = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, h)
	if h == "" {
		h = "replica"
	}
	return h + "-" + nuid.Next()[:8]
}

// Close releases the connections in reverse order of opening.
func (d *Deps) Close() error {
	var errs []error
	for i := len(d.closers) - 1; i >= 0; i-- {
		errs = append(errs, d.closers[i]())
	}
	d.closers = nil
	return errors.Join(errs...)
}

// Topology is the crawl's streams and consumers for cfg.
func Topology(cfg config.Config, names subjects.Names) bus.Topology {
	return bus.Topology{
		Names: names, Partitions: cfg.PartitionCount, DedupWindow: cfg.DedupWindow,
		// A task may wait in the pull buffer for one fetch, then take one.
		FetchAck:     cfg.FetchAckWait(),
		ParsedMaxAge: cfg.ParsedMaxAge, ParsedMaxBytes: cfg.ParsedMaxBytes,
		ParsedInterest: cfg.ParsedRetention == "interest",
	}
}

func newDeps(cfg config.Config, log *slog.Logger) (*Deps, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	names, err := subjects.New(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	return &Deps{Config: cfg, Names: names, Log: log, Registry: prometheus.NewRegistry()}, nil
}

// OpenEmbedded starts the all-in-one dependencies under cfg.DataDir: a NATS
// server with JetStream on disk and a bbolt store. listen optionally exposes
// the NATS server on TCP.
func OpenEmbedded(ctx context.Context, cfg config.Config, listen string, log *slog.Logger) (*Deps, error) {
	d, err := newDeps(cfg, log)
	if err != nil {
		return nil, err
	}
	if d.Config.PartitionCount, err = settleRunPartitions(cfg); err != nil {
		return nil, err
	}
	if d.Config.ParsedRetention == "" {
		// One process writes --out and --archive from pages.parsed: keep a
		// document until they have it, not for a week (docs/configuration.md).
		d.Config.ParsedRetention = "interest"
	}
	cfg = d.Config
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	// The store first: its file lock tells a second process on the same
	// directory to go away before it touches JetStream's files.
	st, err := store.OpenBolt(filepath.Join(cfg.DataDir, "store.db"))
	if err != nil {
		return nil, err
	}
	d.Store = st
	d.closers = append(d.closers, st.Close)
	d.Registry.MustRegister(st.Collectors()...) // trawler_store_commits_total, _writes_total
	d.closed = listen == ""
	eo := bus.EmbeddedOptions{StoreDir: filepath.Join(cfg.DataDir, "nats"), Listen: listen,
		Token: cfg.NATSToken, User: cfg.NATSUser, Password: cfg.NATSPassword, Log: log.With("lib", "nats-server")}
	if w := listenWarning(listen, eo); w != "" {
		log.Warn(w, "listen", listen)
	}
	ns, err := bus.StartEmbedded(eo)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.closers = append(d.closers, func() error {
		// JetStream first, as Shutdown would: Shutdown itself, finding a
		// pull request still pending (a stopped service's, dropped by the
		// server only when it next looks), tells its puller and sleeps
		// 50 ms for the word to get out: every run's exit paid it.
		_ = ns.ShutdownJetStream()
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil
	})
	if d.NC, err = bus.ConnectEmbedded(ns, "trawler-run", eo.EmbeddedAuth()...); err != nil {
		d.Close()
		return nil, err
	}
	d.NC.SetErrorHandler(bus.ClientErrors(log))
	// The buckets the parser and the fetcher open as they start, made
	// beside the streams: one after the other, each on the way to the
	// crawl's first request, they took a tenth of a short crawl's start.
	buckets := []jetstream.KeyValueConfig{scope.BucketConfig(d.Names)}
	if !cfg.IgnoreRobots {
		buckets = append(buckets, fetcher.RobotsBucketConfig(d.Names, cfg.RobotsTTL))
	}
	return d, d.finish(ctx, buckets...)
}

// OpenCluster connects to an external NATS and, when withStore, to Redis.
func OpenCluster(ctx context.Context, cfg config.Config, withStore bool, name string, log *slog.Logger) (*Deps, error) {
	d, err := newDeps(cfg, log)
	if err != nil {
		return nil, err
	}
	d.cluster = true
	url := cfg.NATSURL
	if url == "" {
		url = nats.DefaultURL
	}
	if d.NC, err = bus.Connect(url, name, NATSOptions(cfg)); err != nil {
		return nil, err
	}
	d.NC.SetErrorHandler(bus.ClientErrors(log))
	if withStore {
		addrs := cfg.RedisAddrs
		if len(addrs) == 0 {
			addrs = []string{"127.0.0.1:6379"}
		}
		st, err := store.OpenRedis(ctx, addrs, cfg.RedisCluster, d.Names.Prefix, redisOptions(cfg)...)
		if err != nil {
			d.NC.Close()
			return nil, err
		}
		d.Store = st
		d.closers = append(d.closers, st.Close)
	}
	return d, d.finish(ctx)
}

// finish creates the JetStream context and ensures the topology.
func (d *Deps) finish(ctx context.Context, buckets ...jetstream.KeyValueConfig) error {
	nc := d.NC
	d.closers = append(d.closers, func() error { return nc.Drain() })
	// Without a timeout an async publish whose ack is lost waits forever.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(bus.PublishAckWait))
	if err != nil {
		d.Close()
		return err
	}
	js = bus.WithReplicas(js, d.Config.Replicas)
	d.JS = js
	t := Topology(d.Config, d.Names)
	t.Buckets = buckets
	if err := t.Ensure(ctx, js); err != nil {
		d.Close()
		return err
	}
	return nil
}
