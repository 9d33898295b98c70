package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// File name endings of the JSON Lines sink: complete files, and the one a
// replica is writing.
const (
	JSONLSuffix = ".jsonl"
	OpenSuffix  = ".open"
)

// JSONLOptions configure a JSON Lines sink.
type JSONLOptions struct {
	JS         jetstream.JetStream
	Names      subjects.Names
	Dir        string
	MaxSize    int64         // rotate files at this size (default 1 GiB)
	MaxAge     time.Duration // and at this age (default 1h)
	MaxDeliver int
	Log        *slog.Logger
	Registerer prometheus.Registerer
}

// JSONLSink writes one JSON object per parsed page to rotating files: the
// Parsed document as the parser published it, one line each
// (messages.AppendParsedLine, the --out file's line too).
type JSONLSink struct {
	o      JSONLOptions
	Stats  Stats
	flush  *flushSignal
	direct *directSink // handed its documents in process (openDirect)
}

// NewJSONL builds a JSON Lines sink replica; Run starts it.
func NewJSONL(o JSONLOptions) *JSONLSink {
	s := &JSONLSink{o: o, flush: newFlushSignal()}
	registerStats(o.Registerer, "archive_jsonl", &s.Stats)
	return s
}

// Run completes the .open files a crashed replica left, then writes lines
// until ctx ends.
func (s *JSONLSink) Run(ctx context.Context) error {
	if s.direct != nil {
		return s.direct.run(ctx)
	}
	c, err := EnsureJSONL(ctx, s.o.JS, s.o.Names)
	if err != nil {
		return starting(ctx, err)
	}
	lf, err := s.open()
	if err != nil {
		return err
	}
	dlq := bus.DeadLetters{JS: s.o.JS, Names: s.o.Names, Service: "archive", MaxDeliver: s.o.MaxDeliver}
	return run(ctx, c, &jsonlWriter{f: lf, stats: &s.Stats}, s.flush, dlq, &s.Stats, s.log())
}

// openDirect readies the sink to be handed its documents (Hand) instead
// of reading pages.parsed.
func (s *JSONLSink) openDirect() error {
	lf, err := s.open()
	if err != nil {
		return err
	}
	s.direct = newDirectSink(&jsonlWriter{f: lf, stats: &s.Stats}, &s.Stats, s.log())
	return nil
}

// Hand writes the line of a parsed document in process; see
// directSink.hand.
func (s *JSONLSink) Hand(doc []byte) error {
	if s.direct == nil {
		return errors.New("archive: JSON Lines sink not opened to be handed documents")
	}
	return s.direct.hand(bus.NewLocalMsg(&nats.Msg{Data: doc}, nil))
}

func (s *JSONLSink) log() *slog.Logger {
	if s.o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.o.Log
}

// open completes the .open files a crashed replica left in Dir and opens
// the line file.
func (s *JSONLSink) open() (*lineFile, error) {
	if done, err := RecoverLines(s.o.Dir); err != nil {
		return nil, err
	} else if len(done) > 0 {
		s.log().Info("recovered JSON Lines files of a stopped writer", "files", done)
	}
	return newLineFile(s.o.Dir, s.o.Names.Prefix, s.o.MaxSize, s.o.MaxAge)
}

type jsonlWriter struct {
	f     *lineFile
	stats *Stats
}

func (jw *jsonlWriter) write(batch []jetstream.Msg) (map[jetstream.Msg]error, error) {
	var bad map[jetstream.Msg]error
	size := 0
	for _, m := range batch {
		size += len(m.Data()) + 1
	}
	buf := make([]byte, 0, size)
	n := 0
	for _, m := range batch {
		// Decoded only to refuse what is not a Parsed document (the line
		// is the document as published, as --out writes it).
		var p messages.Parsed
		err := messages.Decode(m.Data(), &p)
		if err == nil {
			buf, err = messages.AppendParsedLine(buf, m.Data())
		}
		if err != nil {
			if bad == nil {
				bad = map[jetstream.Msg]error{}
			}
			bad[m] = err
			continue
		}
		n++
	}
	if err := jw.f.write(buf); err != nil {
		return nil, err
	}
	jw.stats.Records.Add(int64(n))
	jw.stats.Bytes.Add(int64(len(buf)))
	return bad, nil
}

func (jw *jsonlWriter) sync() error        { return jw.f.sync() }
func (jw *jsonlWriter) rotateIfDue() error { return jw.f.rotateIfDue() }
func (jw *jsonlWriter) close() error       { return jw.f.close() }

// lineFile is a rotating file of whole lines, written as NAME.jsonl.open and
// renamed to NAME.jsonl once complete, like the WARC writer's files.
type lineFile struct {
	dir, prefix, token string
	maxSize            int64
	maxAge             time.Duration

	f      *os.File
	path   string
	size   int64
	opened time.Time
	serial int
}

func newLineFile(dir, prefix string, maxSize int64, maxAge time.Duration) (*lineFile, error) {
	if maxSize <= 0 {
		maxSize = 1 << 30
	}
	if maxAge <= 0 {
		maxAge = time.Hour
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var r [3]byte
	_, _ = rand.Read(r[:])
	token := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, host) + "-" + hex.EncodeToString(r[:])
	return &lineFile{dir: dir, prefix: prefix, token: token, maxSize: maxSize, maxAge: maxAge}, nil
}

func (l *lineFile) write(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if l.f != nil && (l.size >= l.maxSize || time.Since(l.opened) >= l.maxAge) {
		if err := l.complete(); err != nil {
			return err
		}
	}
	if l.f == nil {
		now := time.Now().UTC()
		l.serial++
		name := fmt.Sprintf("%s-%s%03d-%05d-%s%s", l.prefix, now.Format("20060102150405"), now.Nanosecond()/1e6, l.serial, l.token, JSONLSuffix)
		path := filepath.Join(l.dir, name+OpenSuffix)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if err := lock(f); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("lock %s: %w", path, err)
		}
		l.f, l.path, l.size, l.opened = f, path, 0, now
	}
	if _, err := l.f.Write(data); err != nil {
		if terr := l.f.Truncate(l.size); terr == nil {
			_, _ = l.f.Seek(l.size, 0)
		}
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	l.size += int64(len(data))
	return nil
}

func (l *lineFile) sync() error {
	if l.f == nil {
		return nil
	}
	return l.f.Sync()
}

func (l *lineFile) rotateIfDue() error {
	if l.f == nil || time.Since(l.opened) < l.maxAge {
		return nil
	}
	return l.complete()
}

func (l *lineFile) close() error {
	if l.f == nil {
		return nil
	}
	return l.complete()
}

func (l *lineFile) complete() error {
	f, path := l.f, l.path
	l.f = nil
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return publish(path, strings.TrimSuffix(path, OpenSuffix))
}

func publish(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RecoverLines completes the .jsonl.open files of crashed writers in dir: each
// is cut after its last whole line and renamed, or removed when empty. Files
// a live writer holds are left alone.
func RecoverLines(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+JSONLSuffix+OpenSuffix))
	if err != nil {
		return nil, err
	}
	var done []string
	for _, path := range paths {
		final, err := recoverLineFile(path)
		if err != nil {
			return done, err
		}
		if final != "" {
			done = append(done, final)
		}
	}
	return done, nil
}

func recoverLineFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if lock(f) != nil {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	keep := bytes.LastIndexByte(data, '\n') + 1
	if keep == 0 {
		f.Close()
		return "", os.Remove(path)
	}
	if err := f.Truncate(int64(keep)); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	final := strings.TrimSuffix(path, OpenSuffix)
	return final, publish(path, final)
}
