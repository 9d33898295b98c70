package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/services/archive"
	"github.com/trawlerhq/trawler/services/fetcher"
	"github.com/trawlerhq/trawler/services/parser"
)

// ErrInterrupted is returned by RunAll when ctx ended before the crawl did.
var ErrInterrupted = errors.New("crawl interrupted; run the same command again to resume")

// ErrNoSeeds is returned by RunAll for a new data dir and no seed.
var ErrNoSeeds = errors.New("no seed URL: give one as an argument, with --seed or --seeds-file")

// FinishedError is returned by RunAll, before anything starts, when the data
// dir holds a finished crawl and no seed was given: nothing is left to do.
type FinishedError struct {
	DataDir       string
	Pages, Queued uint64
	// Scheduled are URLs a continuous crawl scheduled for revisits, which
	// a run without --revisit-min/--revisit-max leaves waiting.
	Scheduled int64
}

func (e *FinishedError) Error() string {
	if e.Scheduled > 0 && e.Queued == 0 {
		return fmt.Sprintf("the crawl in %s is a continuous one (%d pages over its life, %d URLs scheduled for revisits): run it with --revisit-min and --revisit-max to go on revisiting, add --seed URLs to extend it, or use a new --data-dir to start over",
			e.DataDir, e.Pages, e.Scheduled)
	}
	if e.Queued > 0 {
		return fmt.Sprintf("the crawl in %s spent its --max-pages budget (%d pages over its life, %d URLs left queued): raise --max-pages to go on, add --seed URLs, or use a new --data-dir to start over",
			e.DataDir, e.Pages, e.Queued)
	}
	return fmt.Sprintf("the crawl in %s is finished (%d pages over its life, nothing queued): add --seed URLs to extend it, or use a new --data-dir to start over",
		e.DataDir, e.Pages)
}

// Summary is what a finished run reports.
type Summary struct {
	Fetched     int64         // responses received in this run
	Errors      int64         // fetches without a response in this run
	Total       uint64        // pages fetched over the crawl's life (resumes included)
	Queued      uint64        // URLs left queued (budget spent)
	DeadLetters uint64        // messages parked on the dead-letter subjects
	Elapsed     time.Duration // this run
	// Counters are this run's trawler_* counters and gauges (heartbeat.Flatten).
	Counters map[string]float64
	// FailingHosts are the hosts with the most fetches without a response,
	// and the last reason.
	FailingHosts []fetcher.HostFailures
	// DroppedBudget and DroppedQueue are the URLs the frontier store
	// dropped over the crawl's life (resumes included): over a host's
	// --max-pages-per-host, and pushed out of a queue full at
	// --max-queue-per-host.
	DroppedBudget, DroppedQueue uint64
}

// RunOptions are the all-in-one mode's extras.
type RunOptions struct {
	Progress io.Writer // live progress (nil: none)
	// Listen exposes the embedded NATS server on TCP (for taps and status).
	Listen string
	// MemoryLimit is the resident memory to hold the process near (0:
	// none; see HoldMemory).
	MemoryLimit config.Size
}

// RunAll crawls with every service in this process over an embedded NATS
// server and store under cfg.DataDir, until nothing is left to crawl or ctx
// ends. A later call with the same data dir resumes.
func RunAll(ctx context.Context, cfg config.Config, o RunOptions, log *slog.Logger) (Summary, error) {
	start := time.Now()
	if o.MemoryLimit > 0 {
		defer HoldMemory(o.MemoryLimit, "--memory-limit", log)()
	}
	d, err := OpenEmbedded(ctx, cfg, o.Listen, log)
	if err != nil {
		return Summary{}, err
	}
	cfg.PartitionCount = d.Config.PartitionCount // the data dir's (crawl.json)
	defer d.Close()

	seeds, err := cfg.AllSeeds()
	if err != nil {
		return Summary{}, err
	}
	// One resolver for the seeds' check and the fetcher: a seed's name is
	// looked up once.
	if d.resolver, err = newResolver(cfg, d.Registry); err != nil {
		return Summary{}, err
	}
	if seeds, err = unrefusedSeeds(ctx, cfg, d.resolver, seeds, log); err != nil {
		return Summary{}, err
	}
	if len(seeds) > 0 {
		n, err := Seed(ctx, d, seeds)
		if err != nil {
			if n == 0 {
				return Summary{}, err
			}
			log.Warn("some seeds were skipped", "err", err)
		}
	} else if err := nothingToResume(ctx, d, cfg); err != nil {
		return Summary{}, err
	}
	warnSchedule(ctx, d, cfg, log)

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	// The sinks (--archive, --out) are prepared before the services: their
	// consumers must see every page. pages.parsed keeps a document only
	// while a consumer has yet to read it (--parsed-retention interest), so
	// a page parsed before --out's consumer existed was never written (the
	// first URL of a crawl that fails at once, seen in
	// TestUnresolvableHostEndsItsURLs). They run on a context of their own:
	// they outlive the services, to write the end of the crawl.
	type namedSink struct {
		flag string
		Sink
	}
	var sinks []namedSink
	var arch *archive.Archive
	if cfg.Archive != "" {
		if d.closed {
			if d.archiveInProcess, err = archiveInProcess(ctx, d); err != nil {
				return Summary{}, err
			}
			d.pagesInProcess = d.archiveInProcess
		}
		a, err := NewService(runCtx, "archive", d)
		if err != nil {
			return Summary{}, err
		}
		arch, _ = unwrap(a).(*archive.Archive)
		sinks = append(sinks, namedSink{"--archive", a.(Sink)})
	} else if _, err := d.JS.Consumer(ctx, d.Names.StreamPages(), archive.ConsumerWARC); err == nil {
		log.Warn("an archive consumer of an earlier run exists: pages are kept in --data-dir until it writes them; run with --archive DIR, or start over")
	} else {
		d.pagesInProcess = d.closed
	}
	var out *archive.Out
	if cfg.Out != "" {
		direct, err := outInProcess(ctx, d)
		if err != nil {
			return Summary{}, err
		}
		out = newOut(d, direct)
		sinks = append(sinks, namedSink{"--out", out})
	}
	for _, s := range sinks {
		if err := s.Prepare(runCtx); err != nil {
			return Summary{}, wrapSinkErr(s.flag, err)
		}
	}
	sinkCtx, stopSinks := context.WithCancel(context.WithoutCancel(ctx))
	sinkErrs := make([]chan error, len(sinks))
	runErr := make(chan error, len(Services)+len(sinks)+1)
	for i, s := range sinks {
		sinkErrs[i] = make(chan error, 1)
		go func() {
			err := s.Run(sinkCtx)
			sinkErrs[i] <- err
			if err != nil && sinkCtx.Err() == nil {
				// A sink that fails during the crawl (a full disk) stops
				// it: what it has not written waits for the next run.
				runErr <- wrapSinkErr(s.flag, err)
			}
		}()
	}
	// endSinks ends the sinks' Run and returns their errors (once).
	var sinksStopped []error
	endSinks := func() error {
		if sinksStopped == nil {
			stopSinks()
			sinksStopped = make([]error, len(sinks))
			for i, s := range sinks {
				if err := <-sinkErrs[i]; err != nil {
					sinksStopped[i] = wrapSinkErr(s.flag, err)
				}
			}
		}
		return errors.Join(sinksStopped...)
	}
	defer endSinks() // an early return: the files are closed all the same
	// The end watcher below looks when dedup or the frontier may have
	// finished the last work, not only at its interval.
	moved := make(chan struct{}, 1)
	d.moved = func() {
		select {
		case moved <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	var fetch *fetcher.Service
	var parse *parser.Service
	svcs := make([]Runner, len(Services))
	if d.closed {
		// Nothing but this process's fetcher can take a fetch task: the
		// frontier hands them over in process while the fetcher has room.
		d.tasks = bus.NewInbox(d.Names.StreamFetch(), cfg.FetchWorkers)
	}
	for i, name := range Services {
		svc, err := NewService(runCtx, name, d)
		if err != nil {
			closeUnstarted(svcs[:i], log)
			return Summary{}, err
		}
		svcs[i] = svc
		switch s := unwrap(svc).(type) {
		case *fetcher.Service:
			fetch = s
		case *parser.Service:
			parse = s
		}
	}
	var docsTo []func(taskID string, doc []byte) error
	if out != nil && out.Direct() {
		docsTo = append(docsTo, out.Write)
	}
	if arch != nil && arch.Direct() {
		parse.ArchivePagesTo(arch.HandPage)
		docsTo = append(docsTo, func(_ string, doc []byte) error { return arch.HandDoc(doc) })
	}
	if len(docsTo) > 0 {
		parse.HandDocsTo(func(taskID string, doc []byte) error {
			for _, write := range docsTo {
				if err := write(taskID, doc); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if count, ok := parsedUnread(ctx, d); ok {
		parse.CountDocsIn(count)
	}
	if d.pagesInProcess {
		fetch.HandPagesTo(parse.Handle, nil)
	} else {
		// Others may connect (--nats-listen) or read already (--archive):
		// pages are handed over while nothing but the parser reads them.
		r := newPagesReaders(runCtx, d)
		fetch.HandPagesTo(parse.Handle, r.alone)
		go r.watch(runCtx)
	}
	for i, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Run(runCtx); err != nil {
				runErr <- fmt.Errorf("%s: %w", Services[i], err)
			}
		}()
	}
	if cfg.MetricsAddr != "" {
		ServeMetrics(runCtx, cfg.MetricsAddr, d, log)
	}
	if err := startHeartbeat(runCtx, d, cfg.Archive != ""); err != nil {
		log.Warn("no heartbeat: trawler status cannot attach to this crawl", "err", err)
	}

	parts, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	w := &crawlstate.Watcher{JS: d.JS, Names: d.Names, Store: d.Store, Partitions: parts, MaxPages: cfg.MaxPages, IgnoreSchedule: !cfg.Continuous(), Wake: moved}
	prog := newProgress(o.Progress, start)
	waitCtx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	go func() {
		select {
		case err := <-runErr:
			log.Error("service failed", "err", err)
			runErr <- err
			cancelWait()
		case <-waitCtx.Done():
		}
	}()
	// Two finished snapshots in a row end the crawl: every 100 ms, so the
	// end costs a crawl ~0.2 s, not ~0.5 (a snapshot is a few stream and
	// store reads).
	stall := crawlstate.Stall{After: crawlstate.StallAfter}
	last, waitErr := w.Wait(waitCtx, 100*time.Millisecond, func(s crawlstate.Snapshot) {
		prog.show(s, fetch, false)
		if line, ok := stall.See(s); ok {
			u := fetch.RobotsUnreachable()
			log.Warn(line + crawlstate.RobotsWait(u.Retrying, time.Until(u.LastGiveUp), u.Last))
		}
	})
	prog.show(last, fetch, true)

	stop() // services finish the work in hand, ack it and return
	wg.Wait()
	if waitErr == nil { // the crawl finished: the sinks write its end
		for _, s := range sinks {
			if err := s.Drain(ctx); err != nil {
				endSinks()
				return Summary{}, wrapSinkErr(s.flag, err)
			}
		}
	}
	if err := endSinks(); err != nil {
		return Summary{}, err
	}
	sum := Summary{
		Fetched: fetch.Stats.Fetched.Load(), Errors: fetch.Stats.Errors.Load(),
		Total: last.PagesTotal(), Queued: last.Queued(), DeadLetters: last.DeadLetters, Elapsed: time.Since(start),
		DroppedBudget: last.Store.DroppedBudget(), DroppedQueue: last.Store.DroppedQueue,
	}
	sum.Counters, _ = heartbeat.Flatten(d.Registry)
	sum.FailingHosts = fetch.FailingHosts(5)
	select {
	case err := <-runErr:
		return sum, err
	default:
	}
	if waitErr != nil {
		return sum, ErrInterrupted
	}
	return sum, nil
}

// outInProcess tells whether run's --out writer takes its documents from
// the parser in process (archive.OutOptions.Direct) rather than from
// pages.parsed: when the pages go to the parser in process too, nothing
// else can read that stream; see consumersDone.
func outInProcess(ctx context.Context, d *Deps) (bool, error) {
	if !d.pagesInProcess {
		return false, nil
	}
	return consumersDone(ctx, d, "--out", map[string]string{d.Names.StreamParsed(): archive.ConsumerOut})
}

// archiveInProcess tells whether run's --archive is handed its pages and
// documents in process (archive.Options.Direct), for a crawl whose streams
// nothing else can read (the caller checks); see consumersDone.
func archiveInProcess(ctx context.Context, d *Deps) (bool, error) {
	return consumersDone(ctx, d, "--archive", map[string]string{
		d.Names.StreamPages(): archive.ConsumerWARC, d.Names.StreamParsed(): archive.ConsumerJSONL})
}

// consumersDone reports whether a sink's durable consumers (stream ->
// name) that an earlier run with --nats-listen left, if any, have nothing
// left to write; it deletes them then, or their streams would keep every
// message for them. With messages left, this run writes them through the
// consumers, and the next one goes in process.
func consumersDone(ctx context.Context, d *Deps, flag string, consumers map[string]string) (bool, error) {
	var found []string
	for stream, name := range consumers {
		c, err := d.JS.Consumer(ctx, stream, name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("%s consumer %s: %w", flag, name, err)
		}
		if n, err := bus.Backlog(ctx, d.JS, c); err != nil || n > 0 {
			return false, err
		}
		found = append(found, stream, name)
	}
	for i := 0; i < len(found); i += 2 {
		if err := d.JS.DeleteConsumer(ctx, found[i], found[i+1]); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return false, fmt.Errorf("%s consumer %s: %w", flag, found[i+1], err)
		}
	}
	return true, nil
}

// wrapSinkErr names the flag of a sink's error; --out's errors name it
// already.
func wrapSinkErr(flag string, err error) error {
	if strings.HasPrefix(err.Error(), flag) {
		return err
	}
	return fmt.Errorf("%s: %w", flag, err)
}

// nothingToResume tells, for a run without seeds, whether the data dir holds
// work: a new one (ErrNoSeeds) or a finished crawl (*FinishedError) does not.
func nothingToResume(ctx context.Context, d *Deps, cfg config.Config) error {
	parts, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	w := &crawlstate.Watcher{JS: d.JS, Names: d.Names, Store: d.Store, Partitions: parts, MaxPages: cfg.MaxPages, IgnoreSchedule: !cfg.Continuous()}
	s, err := w.Snapshot(ctx)
	if err != nil {
		return nil // let the crawl's own wait report trouble
	}
	switch {
	case !s.Idle():
		return nil
	case s.Store.Enqueued == 0 && s.PagesTotal() == 0:
		return ErrNoSeeds
	}
	return &FinishedError{DataDir: cfg.DataDir, Pages: s.PagesTotal(), Queued: s.Queued(), Scheduled: s.Store.Scheduled}
}

// warnSchedule says, for a run that does not revisit, that the data dir
// holds a continuous crawl's schedule, which this run leaves waiting.
func warnSchedule(ctx context.Context, d *Deps, cfg config.Config, log *slog.Logger) {
	if cfg.Continuous() {
		return
	}
	parts, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	if st, err := d.Store.Stats(ctx, parts); err == nil && st.Scheduled > 0 {
		log.Warn(fmt.Sprintf("%s holds %d URLs scheduled for revisits by a continuous crawl; this run leaves them waiting: add --revisit-min and --revisit-max to revisit them", cfg.DataDir, st.Scheduled))
	}
}

// startHeartbeat announces the process to `trawler status`, with the
// store's totals: status cannot open the bbolt file this process holds.
func startHeartbeat(ctx context.Context, d *Deps, archiving bool) error {
	services := append([]string(nil), Services...)
	if archiving {
		services = append(services, "archive")
	}
	parts, _ := (&config.Config{PartitionCount: d.Config.PartitionCount}).OwnedPartitions()
	return heartbeat.Start(ctx, heartbeat.Options{
		JS: d.JS, Names: d.Names, Service: "run", Services: services, Gatherer: d.Registry, Every: time.Second,
		StoreStats: func(ctx context.Context) (store.Stats, error) { return d.Store.Stats(ctx, parts) },
		Log:        d.Log,
	})
}

// progress draws one live status line: a rewritten line on a terminal, a
// line every few seconds elsewhere.
type progress struct {
	w      io.Writer
	tty    bool
	start  time.Time
	lastAt time.Time
	last   int64
	rate   float64
	// body bytes, for the byte rate
	lastBytes int64
	byteRate  float64
	shownAt   time.Time
}

func newProgress(w io.Writer, start time.Time) *progress {
	p := &progress{w: w, start: start, lastAt: start}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// show draws s with this run's fetch counts; final forces a last line.
func (p *progress) show(s crawlstate.Snapshot, f *fetcher.Service, final bool) {
	if p.w == nil || s.At.IsZero() {
		return
	}
	st := &f.Stats
	fetched, errs := st.Fetched.Load()+st.Errors.Load(), st.Errors.Load()
	if dt := s.At.Sub(p.lastAt).Seconds(); dt >= 1 {
		inst := float64(fetched-p.last) / dt
		p.rate = 0.5*p.rate + 0.5*inst // smooth the jitter of short intervals
		bytes := st.Bytes.Load()
		p.byteRate = 0.5*p.byteRate + 0.5*float64(bytes-p.lastBytes)/dt
		p.last, p.lastBytes, p.lastAt = fetched, bytes, s.At
	}
	every := 5 * time.Second
	if p.tty {
		every = 250 * time.Millisecond
	}
	if s.At.Sub(p.shownAt) < every && !final {
		return
	}
	p.shownAt = s.At
	rate, byteRate := p.rate, p.byteRate
	if final {
		secs := max(time.Since(p.start).Seconds(), 1e-3)
		rate, byteRate = float64(fetched)/secs, float64(st.Bytes.Load())/secs
	}
	line := fmt.Sprintf("done %d (%.1f/s, %s/s) | queued %d | in flight %d | errors %d | dead letters %d | %s",
		fetched, rate, HumanBytes(byteRate), s.Queued(), s.Store.InFlight, errs, s.DeadLetters, time.Since(p.start).Truncate(time.Second))
	if s.Store.Scheduled > 0 {
		// A continuous crawl: what waits for its revisit, and when.
		line += fmt.Sprintf(" | revisits: %d scheduled, %d due now, %d within the hour, %d unchanged so far",
			s.Store.Scheduled, s.Store.DueNow, s.Store.DueHour, f.Stats.Unchanged.Load())
	}
	if u := f.RobotsUnreachable(); u.Retrying > 0 || u.GivenUp > 0 {
		// Hosts whose robots.txt is unreachable hold their URLs until
		// they answer or are given up: say how long that may still take.
		line += fmt.Sprintf(" | robots unreachable: %d retrying", u.Retrying)
		if left := time.Until(u.LastGiveUp); u.Retrying > 0 && left > 0 {
			line += fmt.Sprintf(" (all settled within %s)", left.Round(time.Second))
		}
		line += fmt.Sprintf(", %d given up", u.GivenUp)
	}
	switch {
	case p.tty && !final:
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	default:
		fmt.Fprintln(p.w, line)
	}
}

// HumanBytes writes n bytes with a binary unit (KiB, MiB, ...).
func HumanBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}

// parsedUnread tells whether nothing can ever read pages.parsed in this run,
// and then how to count a page instead: no NATS listener (no tap can
// connect), no consumer on the stream (the sinks, prepared by now, write in
// process), and retention by interest, which drops a document no consumer
// wants as it is stored. Its documents would be written only to be deleted;
// the embedded store counts the pages instead (crawlstate's PagesTotal).
func parsedUnread(ctx context.Context, d *Deps) (func(), bool) {
	b, ok := d.Store.(*store.Bolt)
	if !d.closed || !ok {
		return nil, false
	}
	st, err := d.JS.Stream(ctx, d.Names.StreamParsed())
	if err != nil {
		return nil, false
	}
	info, err := st.Info(ctx)
	if err != nil || info.Config.Retention != jetstream.InterestPolicy || info.State.Consumers > 0 {
		return nil, false
	}
	return b.CountParsedInProcess, true
}
