package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/config"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/services/archive"
	"github.com/trawlerhq/trawler/services/fetcher"
)

// ErrInterrupted is returned by RunAll when ctx ended before the crawl did.
var ErrInterrupted = errors.New("crawl interrupted; run the same command again to resume")

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
}

// RunOptions are the all-in-one mode's extras.
type RunOptions struct {
	Progress io.Writer // live progress (nil: none)
	// Listen exposes the embedded NATS server on TCP (for taps and status).
	Listen string
}

// RunAll crawls with every service in this process over an embedded NATS
// server and store under cfg.DataDir, until nothing is left to crawl or ctx
// ends. A later call with the same data dir resumes.
func RunAll(ctx context.Context, cfg config.Config, o RunOptions, log *slog.Logger) (Summary, error) {
	start := time.Now()
	d, err := OpenEmbedded(ctx, cfg, o.Listen, log)
	if err != nil {
		return Summary{}, err
	}
	defer d.Close()

	seeds, err := cfg.AllSeeds()
	if err != nil {
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
	}

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var arch *archive.Archive
	if cfg.Archive != "" { // before the services: its consumer must see every page
		if arch, err = startArchive(runCtx, d); err != nil {
			return Summary{}, err
		}
	} else if _, err := d.JS.Consumer(ctx, d.Names.StreamPages(), archive.ConsumerWARC); err == nil {
		log.Warn("an archive consumer of an earlier run exists: pages are kept in --data-dir until it writes them; run with --archive DIR, or start over")
	}
	var wg sync.WaitGroup
	runErr := make(chan error, len(Services)+1)
	var fetch *fetcher.Service
	for _, name := range Services {
		svc, err := NewService(runCtx, name, d)
		if err != nil {
			return Summary{}, err
		}
		if f, ok := svc.(*fetcher.Service); ok {
			fetch = f
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Run(runCtx); err != nil {
				runErr <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	if cfg.MetricsAddr != "" {
		ServeMetrics(runCtx, cfg.MetricsAddr, d, log)
	}
	if err := startHeartbeat(runCtx, d, arch != nil); err != nil {
		log.Warn("no heartbeat: trawler status cannot attach to this crawl", "err", err)
	}
	var out *outWriter
	if cfg.Out != "" {
		if out, err = startOut(runCtx, d, cfg.Out); err != nil {
			return Summary{}, err
		}
	}

	parts, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	w := &crawlstate.Watcher{JS: d.JS, Names: d.Names, Store: d.Store, Partitions: parts, MaxPages: cfg.MaxPages}
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
	last, waitErr := w.Wait(waitCtx, 250*time.Millisecond, func(s crawlstate.Snapshot) {
		prog.show(s, &fetch.Stats, false)
	})
	prog.show(last, &fetch.Stats, true)

	stop() // services finish the work in hand, ack it and return
	wg.Wait()
	if out != nil {
		if err := out.finish(waitErr == nil); err != nil {
			return Summary{}, err
		}
	}
	if arch != nil {
		if err := arch.Finish(ctx, waitErr == nil); err != nil {
			return Summary{}, fmt.Errorf("--archive: %w", err)
		}
	}
	sum := Summary{
		Fetched: fetch.Stats.Fetched.Load(), Errors: fetch.Stats.Errors.Load(),
		Total: last.Pages.LastSeq, Queued: last.Queued(), DeadLetters: last.DeadLetters, Elapsed: time.Since(start),
	}
	sum.Counters, _ = heartbeat.Flatten(d.Registry)
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

// startArchive runs the WARC and JSON Lines sinks of --archive.
func startArchive(ctx context.Context, d *Deps) (*archive.Archive, error) {
	cfg := d.Config
	return archive.Start(ctx, archive.Options{
		JS: d.JS, Names: d.Names, Dir: cfg.Archive, MaxSize: cfg.ArchiveMaxSize, MaxAge: cfg.ArchiveMaxAge,
		UserAgent: cfg.UserAgent, MaxDeliver: cfg.MaxDeliver, Log: d.Log.With("service", "archive"), Registerer: d.Registry,
	})
}

// outWriter is a tap on pages.parsed that appends one JSON line per fetched
// URL to a file. It writes effectively once: after each batch it records, in
// a checkpoint file beside the output, the last stream sequence written and
// the file's size. On start it cuts the file back to the checkpointed size
// (dropping a batch cut short by a crash, which JetStream redelivers) and
// skips messages at or below the checkpointed sequence.
type outWriter struct {
	f    *os.File
	ckpt string
	pos  outCheckpoint
	cons jetstream.Consumer
	done chan struct{}
	quit context.CancelFunc
	err  error
}

type outCheckpoint struct {
	Seq  uint64 `json:"seq"`
	Size int64  `json:"size"`
}

func startOut(ctx context.Context, d *Deps, path string) (*outWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	o := &outWriter{f: f, ckpt: path + ".checkpoint", done: make(chan struct{})}
	if err := o.recover(); err != nil {
		f.Close()
		return nil, err
	}
	o.cons, err = d.JS.CreateOrUpdateConsumer(ctx, d.Names.StreamParsed(), jetstream.ConsumerConfig{
		Durable: "out", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4096, AckWait: 30 * time.Second,
		FilterSubject: d.Names.PagesParsed(),
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--out consumer: %w", err)
	}
	octx, quit := context.WithCancel(context.WithoutCancel(ctx))
	msgs, err := bus.PullBatches(octx, o.cons, 1024)
	if err != nil {
		quit()
		f.Close()
		return nil, err
	}
	o.quit = quit
	go o.loop(octx, msgs)
	return o, nil
}

// recover reads the checkpoint and cuts off what was written after it.
func (o *outWriter) recover() error {
	fi, err := o.f.Stat()
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	data, err := os.ReadFile(o.ckpt)
	switch {
	case errors.Is(err, os.ErrNotExist):
		o.pos = outCheckpoint{Size: fi.Size()} // a file of the user's: append to it
	case err != nil:
		return fmt.Errorf("--out checkpoint: %w", err)
	default:
		if err := json.Unmarshal(data, &o.pos); err != nil {
			return fmt.Errorf("--out checkpoint %s: %w (delete it to start the file afresh)", o.ckpt, err)
		}
	}
	if fi.Size() < o.pos.Size {
		return fmt.Errorf("--out: %s is shorter (%d bytes) than its checkpoint says (%d); was it edited? delete %s to start afresh",
			o.f.Name(), fi.Size(), o.pos.Size, o.ckpt)
	}
	if err := o.f.Truncate(o.pos.Size); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	_, err = o.f.Seek(o.pos.Size, io.SeekStart)
	return err
}

func (o *outWriter) loop(ctx context.Context, msgs <-chan jetstream.Msg) {
	defer close(o.done)
	for {
		batch := bus.Batch(ctx, msgs, 1024)
		if batch == nil {
			return
		}
		if err := o.write(batch); err != nil {
			o.err = err
			return
		}
		for _, m := range batch {
			_ = m.Ack()
		}
	}
}

func (o *outWriter) write(batch []jetstream.Msg) error {
	var buf []byte
	next := o.pos
	for _, m := range batch {
		md, err := m.Metadata()
		if err != nil || md.Sequence.Stream <= o.pos.Seq {
			continue // written before the last stop
		}
		next.Seq = md.Sequence.Stream
		var p messages.Parsed
		if err := messages.Decode(m.Data(), &p); err != nil {
			continue // not a document we can write; nothing to gain by retrying
		}
		line, _ := json.Marshal(p)
		buf = append(append(buf, line...), '\n')
	}
	if next.Seq == o.pos.Seq {
		return nil
	}
	if _, err := o.f.Write(buf); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	next.Size = o.pos.Size + int64(len(buf))
	data, _ := json.Marshal(next)
	tmp := o.ckpt + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("--out checkpoint: %w", err)
	}
	if err := os.Rename(tmp, o.ckpt); err != nil {
		return fmt.Errorf("--out checkpoint: %w", err)
	}
	o.pos = next
	return nil
}

// finish waits, when drain is set, until every parsed page is written, then
// closes the file.
func (o *outWriter) finish(drain bool) error {
	for drain && o.err == nil {
		ci, err := o.cons.Info(context.Background())
		if err != nil || ci.NumPending+uint64(ci.NumAckPending) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	o.quit()
	<-o.done
	if err := o.f.Close(); err != nil && o.err == nil {
		o.err = err
	}
	return o.err
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
func (p *progress) show(s crawlstate.Snapshot, st *fetcher.Stats, final bool) {
	if p.w == nil || s.At.IsZero() {
		return
	}
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
