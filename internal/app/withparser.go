package app

// `trawler fetcher --with-parser`: one process fetches and parses, as the
// all-in-one mode does. Each page goes to the parser in the worker that
// fetched it instead of through the pages stream (stored, delivered, acked:
// a quarter of the NATS server's messages per page, and its largest), while
// nothing but the parser reads pages.fetched; once a tap or an archive
// consumer appears, pages are published again for it. The parser's own pull
// loop runs as well: it takes what other fetchers and the frontier publish
// on pages.fetched.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/services/fetcher"
	"github.com/trawlerhq/trawler/services/parser"
)

// readersEvery is how often the pages stream's consumers are listed: a tap
// created while the crawl runs gets pages published for it from at most
// this long after it appeared.
var readersEvery = 5 * time.Second

// newFetcherModule wires the fetcher, with the parser in the same process
// under --with-parser in the services mode (run hands pages over itself).
func newFetcherModule(ctx context.Context, d *Deps) (Runner, error) {
	f, err := newFetcher(ctx, d)
	if err != nil || !d.Config.WithParser || !d.cluster {
		return f, err
	}
	p, err := newParser(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("--with-parser: %w", err)
	}
	r := newPagesReaders(ctx, d)
	fetch := unwrap(f).(*fetcher.Service)
	fetch.HandPagesTo(unwrap(p).(*parser.Service).Handle, r.alone)
	return &fetchAndParse{fetch: f, parse: p, readers: r}, nil
}

// newPagesReaders reads the pages stream's consumers once, so that the
// first pages already go the right way; watch keeps it current.
func newPagesReaders(ctx context.Context, d *Deps) *pagesReaders {
	r := &pagesReaders{js: d.JS, stream: d.Names.StreamPages(), parser: d.Names.ConsumerParser(), log: d.Log.With("service", "fetcher")}
	r.refresh(ctx)
	return r
}

// fetchAndParse runs a fetcher and a parser together, the fetcher handing
// its pages to the parser while pages.fetched has no other reader.
type fetchAndParse struct {
	fetch, parse Runner
	readers      *pagesReaders
}

// Services names what the process runs, for its heartbeat.
func (fp *fetchAndParse) Services() []string { return []string{"fetcher", "parser"} }

// Run runs both until ctx ends or one of them fails, which stops the other.
func (fp *fetchAndParse) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); fp.readers.watch(ctx) }()
	errs := make(chan error, 2)
	run := func(name string, r Runner) {
		if err := r.Run(ctx); err != nil {
			errs <- fmt.Errorf("%s: %w", name, err)
			return
		}
		errs <- nil
	}
	go run("fetcher", fp.fetch)
	go run("parser", fp.parse)
	first := <-errs
	cancel()
	second := <-errs
	wg.Wait()
	return errors.Join(first, second)
}

// pagesReaders tracks whether the pages stream has a consumer besides the
// parsers' shared one: a tap, `trawler archive`, a `run --archive` writer.
type pagesReaders struct {
	js     jetstream.JetStream
	stream string
	parser string
	log    *slog.Logger

	only    atomic.Bool // the parser's consumer is the stream's only one
	others  []string    // as last read, for the log line of a change
	known   bool        // read at least once
	failing bool        // the last read failed (said once per streak)
}

// alone reports whether nothing but the parser reads pages.fetched, as last
// read. Until a first read succeeds it says no: pages are published.
func (r *pagesReaders) alone() bool { return r.only.Load() }

// watch reads the stream's consumers every readersEvery until ctx ends.
func (r *pagesReaders) watch(ctx context.Context) {
	t := time.NewTicker(readersEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.refresh(ctx)
		}
	}
}

// refresh lists the stream's consumers; a failed read keeps the last answer
// and says so once, until a read works again.
func (r *pagesReaders) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	others, err := r.read(ctx)
	if err != nil {
		if !r.failing && ctx.Err() == nil {
			r.log.Warn("cannot list the consumers of the pages stream; pages go as before until it can (check the NATS user may read stream and consumer info)",
				"stream", r.stream, "parsing_in_process", r.only.Load(), "err", err)
		}
		r.failing = true
		return
	}
	if r.failing {
		r.log.Info("listing the consumers of the pages stream works again", "stream", r.stream)
		r.failing = false
	}
	slices.Sort(others)
	only := len(others) == 0
	switch {
	case !r.known && only:
		r.log.Info("parsing pages in process: nothing else reads pages.fetched")
	case !r.known:
		r.log.Info("publishing pages on pages.fetched: it has other readers", "consumers", others)
	case only && !r.only.Load():
		r.log.Info("parsing pages in process again: pages.fetched has no other reader left", "gone", r.others)
	case !only && (r.only.Load() || !slices.Equal(others, r.others)):
		r.log.Info("publishing pages on pages.fetched: it has other readers", "consumers", others)
	}
	r.known, r.others = true, others
	r.only.Store(only)
}

// read lists the pages stream's consumers other than the parsers'.
func (r *pagesReaders) read(ctx context.Context) ([]string, error) {
	st, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return nil, err
	}
	var others []string
	names := st.ConsumerNames(ctx)
	for name := range names.Name() {
		if name != r.parser {
			others = append(others, name)
		}
	}
	return others, names.Err()
}
