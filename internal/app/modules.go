package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"github.com/trawlerhq/trawler/internal/cachestudy/record"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/splitter"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/services/archive"
	"github.com/trawlerhq/trawler/services/dedup"
	"github.com/trawlerhq/trawler/services/fetcher"
	"github.com/trawlerhq/trawler/services/frontier"
	"github.com/trawlerhq/trawler/services/parser"
)

// A Module is one target a process can run: `trawler NAME` runs it alone
// against the cluster's NATS (and Redis when it needs the store), `trawler
// run` runs the pipeline's services together over embedded ones. Every entry
// point (the commands, `run`, the profiler, the tests) asks this table, so a
// target is wired in one place.
type Module struct {
	Name string
	// NeedsStore: the module keeps state in the store (the seen set, the
	// frontier's queues): a process running it opens Redis.
	NeedsStore bool
	build      func(ctx context.Context, d *Deps) (Runner, error)
}

// modules are the targets, the pipeline's services first, in pipeline order.
var modules = []Module{
	{Name: "dedup", NeedsStore: true, build: newDedup},
	{Name: "frontier", NeedsStore: true, build: newFrontier},
	{Name: "fetcher", build: newFetcherModule},
	{Name: "parser", build: newParser},
	{Name: "archive", build: newArchive},
}

// Services lists the pipeline's services, in pipeline order: what `run`
// starts (with the archive too when --archive is set).
var Services = []string{"dedup", "frontier", "fetcher", "parser"}

// Lookup returns the module called name.
func Lookup(name string) (Module, error) {
	for _, m := range modules {
		if m.Name == name {
			return m, nil
		}
	}
	known := make([]string, len(modules))
	for i, m := range modules {
		known[i] = m.Name
	}
	sort.Strings(known)
	return Module{}, fmt.Errorf("unknown service %q (known: %v)", name, known)
}

// Open connects a process that runs m alone: the cluster's NATS, and Redis
// when m needs the store.
func (m Module) Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Deps, error) {
	d, err := OpenCluster(ctx, cfg, m.NeedsStore, "trawler-"+m.Name, log)
	if err == nil {
		// Once per service at start (not in seed or status, run often).
		if w := bus.OldServer(d.NC); w != "" {
			log.Warn(w)
		}
	}
	return d, err
}

// New builds m over d.
func (m Module) New(ctx context.Context, d *Deps) (Runner, error) {
	if m.NeedsStore && d.Store == nil {
		return nil, fmt.Errorf("%s needs a store (--redis)", m.Name)
	}
	return m.build(ctx, d)
}

// ServicesOf names the pipeline's services r runs, for its heartbeat:
// name, or more for a process that runs several (`fetcher --with-parser`).
func ServicesOf(r Runner, name string) []string {
	if s, ok := r.(interface{ Services() []string }); ok {
		return s.Services()
	}
	return []string{name}
}

// NewService builds the module called name over d.
func NewService(ctx context.Context, name string, d *Deps) (Runner, error) {
	m, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return m.New(ctx, d)
}

// newDedup wires the dedup service from the crawl's settings.
func newDedup(ctx context.Context, d *Deps) (Runner, error) {
	cfg := d.Config
	parts, err := cfg.OwnedPartitions()
	if err != nil {
		return nil, err
	}
	log := d.Log.With("service", "dedup")
	o := dedup.Options{
		JS: d.JS, Names: d.Names, Seen: d.Store, Partitions: parts, PartitionCount: cfg.PartitionCount, Join: d.joiner(ctx, "dedup"),
		MaxDeliver: cfg.MaxDeliver, Log: log, Registerer: d.Registry,
		CachePolicy: cfg.DedupCache, CacheSize: cfg.DedupCacheSize, StaticFile: cfg.DedupStaticFile,
		ExpectedURLs: cfg.DedupExpectedURLs, BloomFP: cfg.DedupBloomFP, AfterBatch: d.moved,
	}
	if cfg.TraceDir == "" {
		return dedup.New(o), nil
	}
	full, err := record.OpenFull(cfg.TraceDir, cfg.PartitionCount, log)
	if err != nil {
		return nil, fmt.Errorf("dedup trace: %w", err)
	}
	o.Observer = full
	return closing{dedup.New(o), full, log}, nil
}

// newFrontier wires the frontier service from the crawl's settings.
func newFrontier(ctx context.Context, d *Deps) (Runner, error) {
	cfg := d.Config
	parts, err := cfg.OwnedPartitions()
	if err != nil {
		return nil, err
	}
	sched, err := cfg.RevisitSchedule()
	if err != nil {
		return nil, err
	}
	log := d.Log.With("service", "frontier")
	svc := frontier.New(frontier.Options{
		JS: d.JS, Names: d.Names, Store: d.Store, Partitions: parts, Join: d.joiner(ctx, "frontier"),
		Delay: cfg.PolitenessDelay, Factor: cfg.PolitenessFactor, MaxCrawlDelay: cfg.MaxCrawlDelay, MaxGap: cfg.PolitenessMaxGap,
		FetchTimeout: cfg.FetchTimeout,
		IssueAhead:   cfg.IssueAhead,
		MaxAttempts:  cfg.MaxAttempts, MaxDeferrals: cfg.MaxDeferrals, MaxPages: cfg.MaxPages, MaxDeliver: cfg.MaxDeliver,
		Limits:    store.Limits{HostBudget: cfg.HostBudget(), HostQueue: cfg.MaxQueuePerHost},
		Revisit:   sched,
		Inbox:     d.tasks,
		AfterStep: d.moved,
		Log:       log, Registerer: d.Registry,
	})
	// In run the fetcher, built next, is in this process and tells the
	// frontier of its fetches' ends, with --nats-listen too: the next task
	// then goes by the fetch stream rather than in process. Elsewhere
	// nothing calls it.
	d.ended = svc.Ended
	return svc, nil
}

// newFetcher wires the fetcher service from the crawl's settings.
func newFetcher(ctx context.Context, d *Deps) (Runner, error) {
	cfg := d.Config
	log := d.Log.With("service", "fetcher")
	res := d.resolver // run's, which looked up the seeds
	if res == nil {
		var err error
		if res, err = newResolver(cfg, d.Registry); err != nil {
			return nil, err
		}
	}
	ended := d.ended // the frontier in this process (run)
	if ended == nil {
		ended = fetcher.EndsOnNATS(d.NC, d.Names) // the services: say it on NATS
	}
	backlog := cfg.FetchBacklog
	if d.pagesInProcess {
		backlog = 0 // the handover holds the fetcher to the parser's pace
	}
	return fetcher.New(fetcher.Options{
		JS: d.JS, Names: d.Names, Workers: cfg.FetchWorkers, MaxPayload: d.NC.MaxPayload(), MaxDeliver: cfg.MaxDeliver,
		IgnoreRobots: cfg.IgnoreRobots, RobotsTTL: cfg.RobotsTTL, RobotsRetry: cfg.RobotsRetry, Sitemaps: cfg.Sitemaps, GuessSitemap: cfg.SitemapGuess,
		Delay: cfg.PolitenessDelay, Factor: cfg.PolitenessFactor, MaxCrawlDelay: cfg.MaxCrawlDelay, MaxGap: cfg.PolitenessMaxGap,
		IPCeiling: cfg.IPMaxConcurrent, IPGap: cfg.IPDelay, LocalIPGate: d.closed, Inbox: d.tasks, Ended: ended,
		Backlog: backlog, BacklogReaders: backlogReaders(cfg, d),
		HTTP: fetcher.HTTPOptions{
			Timeout: cfg.FetchTimeout, MaxBodyBytes: cfg.MaxBodyBytes, UserAgent: cfg.UserAgent, AllowPrivate: cfg.AllowPrivate, AllowLinkLocal: cfg.AllowLinkLocal,
			AllowedTypes: cfg.AllowedTypes, Resolver: res, MaxURLLength: cfg.MaxURLLength,
			MinTransferRate: cfg.MinTransferRate,
		},
		Log: log, Registerer: d.Registry,
	}), nil
}

// backlogReaders are the consumers of pages.fetched whose backlog holds the
// fetchers back: the parser's, and the WARC writer's of run --archive (the
// same process: its backlog is this process's memory). A `trawler archive`
// of the services is left out: one taken out of a deployment leaves its
// durable consumer behind, which would stop the crawl.
func backlogReaders(cfg config.Config, d *Deps) []string {
	readers := []string{d.Names.ConsumerParser()}
	if cfg.Archive != "" && !d.archiveInProcess {
		readers = append(readers, archive.ConsumerWARC)
	}
	return readers
}

// newParser wires the parser service from the crawl's settings.
func newParser(ctx context.Context, d *Deps) (Runner, error) {
	cfg := d.Config
	log := d.Log.With("service", "parser")
	sc, err := scope.Open(ctx, d.JS, d.Names)
	if err != nil {
		return nil, err
	}
	var recent *splitter.Recent
	if cfg.SplitterCacheSize > 0 {
		if recent, err = splitter.NewRecent(cfg.SplitterCacheSize); err != nil {
			return nil, err
		}
	}
	po := parser.Options{
		Recent: recent,
		JS:     d.JS, Names: d.Names, Scope: sc, PartitionCount: cfg.PartitionCount, Workers: cfg.ParseWorkers,
		MaxDepth: cfg.MaxDepth, MaxRedirects: cfg.MaxRedirects, MaxURLLength: cfg.MaxURLLength,
		MaxDeliver: cfg.MaxDeliver, Log: log, Registerer: d.Registry,
	}
	if err := cfg.ParserOptions(&po); err != nil {
		return nil, err
	}
	if cfg.Out != "" || cfg.Archive != "" {
		po.Text = true // run's --out and --archive write the text, read from here
	}
	if cfg.TraceDir == "" {
		return parser.New(po)
	}
	cross, err := record.OpenCross(cfg.TraceDir, cfg.PartitionCount, log)
	if err != nil {
		return nil, fmt.Errorf("parser trace: %w", err)
	}
	po.Observer = cross
	svc, err := parser.New(po)
	if err != nil {
		cross.Close()
		return nil, err
	}
	return closing{svc, cross, log}, nil
}

// closing is a module whose Runner needs something closed when it ends: the
// cache study's trace recorder (--trace-dir), attached as the service's
// observer. Close runs after Run returns, when the service has finished the
// work in hand and calls the observer no more. A failed close is logged:
// the study never fails the crawl.
type closing struct {
	Runner
	io.Closer
	log *slog.Logger
}

// unwrap returns the service a module's Runner stands for.
func unwrap(r Runner) Runner {
	if c, ok := r.(closing); ok {
		return c.Runner
	}
	return r
}

// closeUnstarted closes what services built but never run opened (a
// --trace-dir recorder): a later one failed to build.
func closeUnstarted(svcs []Runner, log *slog.Logger) {
	for _, r := range svcs {
		if c, ok := r.(closing); ok {
			if err := c.Closer.Close(); err != nil {
				log.Warn("closing the fingerprint trace failed", "err", err)
			}
		}
	}
}

func (c closing) Run(ctx context.Context) error {
	err := c.Runner.Run(ctx)
	if cerr := c.Closer.Close(); cerr != nil {
		c.log.Warn("closing the fingerprint trace failed", "err", cerr)
	}
	return err
}

// A Sink is a module that reads what the crawl publishes alongside it (the
// archive; `run --out` too): Runner, plus Prepare, which creates its durable
// consumers (and opens its files) and is called before the crawl's services
// start, so that it sees every page, and Drain, which at a finished crawl's
// end waits until it has written what its streams hold, before Run's ctx
// ends. `trawler archive` just runs it: Run prepares what was not.
type Sink interface {
	Runner
	Prepare(ctx context.Context) error
	Drain(ctx context.Context) error
}

var (
	_ Sink = (*archive.Archive)(nil)
	_ Sink = (*archive.Out)(nil)
)

// newArchive wires the WARC and JSON Lines sinks of --archive (a Sink).
func newArchive(ctx context.Context, d *Deps) (Runner, error) {
	cfg := d.Config
	return archive.New(archive.Options{
		JS: d.JS, Names: d.Names, Dir: cfg.Archive, MaxSize: cfg.ArchiveMaxSize, MaxAge: cfg.ArchiveMaxAge, GzipLevel: cfg.ArchiveGzipLevel,
		UserAgent: cfg.UserAgent, MaxDeliver: cfg.MaxDeliver, Log: d.Log.With("service", "archive"), Registerer: d.Registry,
		Direct: d.archiveInProcess,
	}), nil
}

// newOut wires run's --out writer (a Sink; not a module of its own: it
// belongs to the all-in-one run); direct: see outInProcess.
func newOut(d *Deps, direct bool) *archive.Out {
	return archive.NewOut(archive.OutOptions{JS: d.JS, Names: d.Names, Path: d.Config.Out, Direct: direct,
		Log: d.Log.With("service", "out"), Registerer: d.Registry})
}
