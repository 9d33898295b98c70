// Package record holds the cache study's trace recorders (docs/cache-study.md):
// Full, the fingerprints dedup receives, and Cross, the links a parser hands
// the host splitter for other partitions. They implement the services'
// observers (dedup.Observer, parser.Observer); `trawler run --trace-dir` and
// the dedup and parser commands attach them (internal/app), and the crawl
// path knows nothing else of the study.
//
// Each Open makes a new file (urltrace.Create), never appending to an old
// one. A write error (disk full) is logged once and stops that trace, never
// the crawl.
package record

import (
	"log/slog"
	"sync/atomic"

	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
)

// file is a trace file being written, shared by the recorders.
type file struct {
	w      *urltrace.Writer
	path   string
	log    *slog.Logger
	failed atomic.Bool
	err    atomic.Pointer[error]
}

func create(dir string, h urltrace.Header, log *slog.Logger) (*file, error) {
	w, path, err := urltrace.Create(dir, h)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("recording a fingerprint trace", "kind", h.Kind.String(), "file", path)
	return &file{w: w, path: path, log: log}, nil
}

// write appends fps under partition p; after the first error it writes
// nothing more and logs that error once.
func (f *file) write(p int, fps []uint64) {
	if f.failed.Load() {
		return
	}
	if err := f.w.Write(p, fps); err != nil && !f.failed.Swap(true) {
		f.err.Store(&err)
		f.log.Warn("fingerprint trace write failed; tracing stops, the crawl goes on", "file", f.path, "err", err)
	}
}

// Err is the write error that stopped the trace, or nil.
func (f *file) Err() error {
	if e := f.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Path is the file's path.
func (f *file) Path() string { return f.path }

// Close flushes and closes the file.
func (f *file) Close() error { return f.w.Close() }
