package app

import (
	"bufio"
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
	"github.com/trawlerhq/trawler/pkg/messages"
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
		prog.show(s, fetch.Stats.Errors.Load())
	})
	prog.end()

	stop() // services finish the work in hand, ack it and return
	wg.Wait()
	if out != nil {
		if err := out.finish(waitErr == nil); err != nil {
			return Summary{}, err
		}
	}
	sum := Summary{
		Fetched: fetch.Stats.Fetched.Load(), Errors: fetch.Stats.Errors.Load(),
		Total: last.Pages.LastSeq, Queued: last.Queued(), DeadLetters: last.DeadLetters, Elapsed: time.Since(start),
	}
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

// outWriter is a tap on pages.parsed that appends one JSON line per fetched
// URL to a file, acking each message after it is written.
type outWriter struct {
	f    *os.File
	buf  *bufio.Writer
	cons jetstream.Consumer
	done chan struct{}
	quit context.CancelFunc
	err  error
}

func startOut(ctx context.Context, d *Deps, path string) (*outWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	cons, err := d.JS.CreateOrUpdateConsumer(ctx, d.Names.StreamParsed(), jetstream.ConsumerConfig{
		Durable: "out", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4096, AckWait: time.Minute,
		FilterSubject: d.Names.PagesParsed(),
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--out consumer: %w", err)
	}
	octx, quit := context.WithCancel(context.WithoutCancel(ctx))
	msgs, err := bus.Pull(octx, cons, 1024)
	if err != nil {
		quit()
		f.Close()
		return nil, err
	}
	o := &outWriter{f: f, buf: bufio.NewWriterSize(f, 1<<16), cons: cons, done: make(chan struct{}), quit: quit}
	go o.loop(octx, msgs)
	return o, nil
}

func (o *outWriter) loop(ctx context.Context, msgs <-chan jetstream.Msg) {
	defer close(o.done)
	for {
		batch := bus.Batch(ctx, msgs, 1024)
		if batch == nil {
			return
		}
		for _, m := range batch {
			var p messages.Parsed
			if err := messages.Decode(m.Data(), &p); err != nil {
				_ = m.Term() // not ours to judge; skip it rather than wedge the file
				continue
			}
			line, _ := json.Marshal(p)
			o.buf.Write(append(line, '\n'))
		}
		if err := o.buf.Flush(); err != nil {
			o.err = fmt.Errorf("--out: %w", err)
			return
		}
		for _, m := range batch {
			_ = m.Ack()
		}
	}
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
	if err := o.f.Sync(); err != nil && o.err == nil {
		o.err = err
	}
	if err := o.f.Close(); err != nil && o.err == nil {
		o.err = err
	}
	return o.err
}

// progress draws one live status line: a rewritten line on a terminal, a
// line every few seconds elsewhere.
type progress struct {
	w        io.Writer
	tty      bool
	start    time.Time
	lastAt   time.Time
	lastSeq  uint64
	rate     float64
	shownAt  time.Time
	firstSeq uint64
	began    bool
}

func newProgress(w io.Writer, start time.Time) *progress {
	p := &progress{w: w, start: start}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) show(s crawlstate.Snapshot, errs int64) {
	if p.w == nil {
		return
	}
	if !p.began {
		p.began, p.firstSeq, p.lastSeq, p.lastAt = true, s.Pages.LastSeq, s.Pages.LastSeq, s.At
	}
	if dt := s.At.Sub(p.lastAt).Seconds(); dt >= 1 {
		inst := float64(s.Pages.LastSeq-p.lastSeq) / dt
		p.rate = 0.5*p.rate + 0.5*inst // smooth the jitter of short intervals
		p.lastSeq, p.lastAt = s.Pages.LastSeq, s.At
	}
	every := 5 * time.Second
	if p.tty {
		every = 250 * time.Millisecond
	}
	if s.At.Sub(p.shownAt) < every {
		return
	}
	p.shownAt = s.At
	line := fmt.Sprintf("fetched %d (%.1f/s) | queued %d | in flight %d | errors %d | dead letters %d | %s",
		s.Pages.LastSeq-p.firstSeq, p.rate, s.Queued(), s.Store.InFlight, errs, s.DeadLetters,
		time.Since(p.start).Truncate(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) end() {
	if p.w != nil && p.tty && p.began {
		fmt.Fprintln(p.w)
	}
}
