package warc

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Suffix ends the name of every completed WARC file; OpenSuffix is added to
// a file while it is written. Readers look only at names ending in Suffix.
const (
	Suffix     = ".warc.gz"
	OpenSuffix = ".open"
)

// Options configure a Writer.
type Options struct {
	Dir    string // where files go; created if missing
	Prefix string // first part of file names (default "trawler")
	// MaxSize completes a file once it holds this many compressed bytes
	// (default 1 GiB, the size the standard's annex suggests).
	MaxSize int64
	// MaxAge completes a file this long after it was opened, so a slow crawl
	// still hands over files regularly (default 1h).
	MaxAge time.Duration
	// GzipLevel is the compression level of the records, 1 (fastest) to 9
	// (smallest); 0 is DefaultGzipLevel.
	GzipLevel int
	// Info are the fields of the warcinfo record that starts every file,
	// after format and conformsTo.
	Info []Field
	// Now reads the clock that ages files and dates their names (default
	// time.Now). Tests inject a manual clock.
	Now func() time.Time
}

// Writer appends records to a WARC file of its own and rotates it. A file is
// written as NAME.warc.gz.open under an exclusive lock and renamed to
// NAME.warc.gz once complete (synced, closed), so a reader never sees a
// partial file; Recover finishes the .open files of a crashed writer. Several
// writers (replicas) may share a directory: names carry a random token.
//
// Writer is safe for concurrent use.
type Writer struct {
	o     Options
	token string

	mu     sync.Mutex
	f      *os.File
	path   string // of the open file, with OpenSuffix
	size   int64  // bytes of complete records in f
	opened time.Time
	infoID string
	serial int
	done   []string
}

// NewWriter prepares a writer; its first file is created by the first Write.
func NewWriter(o Options) (*Writer, error) {
	if o.Dir == "" {
		return nil, errors.New("warc: no directory")
	}
	if o.Prefix == "" {
		o.Prefix = "trawler"
	}
	if o.MaxSize <= 0 {
		o.MaxSize = 1 << 30
	}
	if o.MaxAge <= 0 {
		o.MaxAge = time.Hour
	}
	if o.GzipLevel == 0 {
		o.GzipLevel = DefaultGzipLevel
	}
	if o.GzipLevel < gzip.BestSpeed || o.GzipLevel > gzip.BestCompression {
		return nil, fmt.Errorf("warc: gzip level %d: want 1 (fastest) to 9 (smallest)", o.GzipLevel)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	host, _ := os.Hostname()
	var r [3]byte
	_, _ = rand.Read(r[:])
	return &Writer{o: o, token: safeName(host) + "-" + hex.EncodeToString(r[:])}, nil
}

// safeName keeps the characters that are harmless in a file name.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
	if s == "" {
		return "host"
	}
	return s
}

// Write appends recs, one gzip member each, to the current file, opening or
// rotating files as needed; the records of one call always share a file (a
// request, its response and metadata stay together). Every record but
// warcinfo gets a WARC-Warcinfo-ID field naming its file's warcinfo record.
// Written records are durable only after Sync.
func (w *Writer) Write(recs ...*Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil && w.due(w.o.Now()) {
		if err := w.complete(); err != nil {
			return err
		}
	}
	if w.f == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	for _, r := range recs {
		rec := *r // the caller's Fields stay as they were, should it retry
		if r.Type != TypeWarcinfo {
			rec.Fields = append(append([]Field(nil), r.Fields...), Field{"WARC-Warcinfo-ID", w.infoID})
		}
		if err := compress(&buf, &rec, w.o.GzipLevel); err != nil {
			return err
		}
		r.ID, r.Date = rec.ID, rec.Date
	}
	return w.append(buf.Bytes())
}

// DefaultGzipLevel trades a little size for half the time: on 300 real
// HTML pages (32 KB on average) level 3 takes 103 µs a page for 3.50 ×,
// the default level 6 164 µs for 3.73 × (docs/benchmarks.md); the
// archive's compression was a quarter of `run --archive`'s CPU at level 6.
const DefaultGzipLevel = 3

// gzipWriters, one pool per level, are reused across records: a new
// compressor allocates ~800 KB of state, more than the record it
// compresses. klauspost's gzip, not the standard library's: 70 against
// 390 µs per 16 KB response record at the default level, 7 % larger
// (BenchmarkCompressRecord).
var gzipWriters [gzip.BestCompression + 1]sync.Pool

func init() {
	for level := gzip.BestSpeed; level <= gzip.BestCompression; level++ {
		gzipWriters[level].New = func() any {
			z, _ := gzip.NewWriterLevel(io.Discard, level)
			return z
		}
	}
}

// compress appends r to buf as one gzip member at level (1 to 9).
func compress(buf *bytes.Buffer, r *Record, level int) error {
	raw, err := Marshal(r)
	if err != nil {
		return err
	}
	pool := &gzipWriters[level]
	z := pool.Get().(*gzip.Writer)
	defer pool.Put(z)
	z.Reset(buf)
	if _, err := z.Write(raw); err != nil {
		return err
	}
	return z.Close()
}

// append writes whole members; a short write is cut off again so the file
// holds complete records only.
func (w *Writer) append(data []byte) error {
	if _, err := w.f.Write(data); err != nil {
		if terr := w.f.Truncate(w.size); terr != nil {
			// The file may end in half a record: leave it to Recover.
			w.f.Close()
			w.f = nil
			return fmt.Errorf("warc: write %s: %w (and cutting it back: %v)", w.path, err, terr)
		}
		_, _ = w.f.Seek(w.size, 0)
		return fmt.Errorf("warc: write %s: %w", w.path, err)
	}
	w.size += int64(len(data))
	return nil
}

func (w *Writer) due(now time.Time) bool {
	return w.size >= w.o.MaxSize || now.Sub(w.opened) >= w.o.MaxAge
}

// open creates the next file, locks it and writes its warcinfo record.
func (w *Writer) open() error {
	now := w.o.Now().UTC()
	w.serial++
	name := fmt.Sprintf("%s-%s%03d-%05d-%s%s", w.o.Prefix, now.Format("20060102150405"), now.Nanosecond()/1e6, w.serial, w.token, Suffix)
	path := filepath.Join(w.o.Dir, name+OpenSuffix)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("warc: lock %s: %w", path, err)
	}
	fields := append([]Field{
		{"format", "WARC File Format 1.1"},
		{"conformsTo", "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"},
	}, w.o.Info...)
	block, err := Fields(fields...)
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("warc: warcinfo: %w", err)
	}
	info := &Record{Type: TypeWarcinfo, Date: now, ContentType: ContentTypeFields, Payload: block,
		Fields: []Field{{"WARC-Filename", name}}}
	w.f, w.path, w.size, w.opened = f, path, 0, now
	var buf bytes.Buffer
	if err := compress(&buf, info, w.o.GzipLevel); err != nil {
		w.abandon()
		return err
	}
	if err := w.append(buf.Bytes()); err != nil {
		w.abandon()
		return err
	}
	w.infoID = info.ID
	return nil
}

// abandon drops a file that holds nothing worth keeping.
func (w *Writer) abandon() {
	if w.f != nil {
		w.f.Close()
		os.Remove(w.path)
	}
	w.f = nil
}

// Sync makes every record written so far durable.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("warc: sync %s: %w", w.path, err)
	}
	return nil
}

// RotateIfDue completes the current file if it is full or old, so an idle
// writer still hands its file over after MaxAge.
func (w *Writer) RotateIfDue() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil || !w.due(w.o.Now()) {
		return nil
	}
	return w.complete()
}

// Close completes the current file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	return w.complete()
}

// Completed lists the files this writer has completed, oldest first.
func (w *Writer) Completed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.done...)
}

// complete syncs and closes the file, then renames it to its final name and
// syncs the directory, so the rename survives a crash too.
func (w *Writer) complete() error {
	f, path := w.f, w.path
	w.f = nil
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("warc: sync %s: %w (left for recovery)", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("warc: close %s: %w (left for recovery)", path, err)
	}
	final := strings.TrimSuffix(path, OpenSuffix)
	if err := publish(path, final); err != nil {
		return err
	}
	w.done = append(w.done, final)
	return nil
}

// publish renames a finished file to its final name durably.
func publish(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	return syncDir(filepath.Dir(to))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("warc: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("warc: sync %s: %w", dir, err)
	}
	return nil
}
