package archive

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/warc"
)

// WARCOptions configure a WARC sink.
type WARCOptions struct {
	JS      jetstream.JetStream
	Names   subjects.Names
	Dir     string        // where .warc.gz files go
	MaxSize int64         // rotate files at this size (default 1 GiB)
	MaxAge  time.Duration // and at this age (default 1h)
	// GzipLevel compresses the records (warc.Options; 0: its default).
	GzipLevel int
	// UserAgent goes into the rebuilt request records (the crawl's --user-agent).
	UserAgent  string
	MaxDeliver int
	Log        *slog.Logger
	Registerer prometheus.Registerer
}

// WARCSink archives every fetched page as WARC records.
type WARCSink struct {
	o      WARCOptions
	Stats  Stats
	flush  *flushSignal
	direct *directSink // handed its pages in process (openDirect)
}

// NewWARC builds a WARC sink replica; Run starts it.
func NewWARC(o WARCOptions) *WARCSink {
	s := &WARCSink{o: o, flush: newFlushSignal()}
	registerStats(o.Registerer, "archive_warc", &s.Stats)
	return s
}

func registerStats(reg prometheus.Registerer, subsystem string, st *Stats) {
	bus.RegisterCounters(reg, subsystem,
		bus.Counter{Name: "messages_total", Help: "Messages archived and acknowledged.", Value: &st.Messages},
		bus.Counter{Name: "records_total", Help: "Records (WARC) or lines (JSON Lines) written.", Value: &st.Records},
		bus.Counter{Name: "bytes_total", Help: "Payload bytes archived.", Value: &st.Bytes},
		bus.Counter{Name: "parked_total", Help: "Messages dead-lettered as unarchivable.", Value: &st.Parked},
	)
}

// Run first completes the .open files a crashed replica left in Dir, then
// archives pages until ctx ends and completes its last file. A sink
// opened to be handed its pages (openDirect) archives what Hand gives it.
func (s *WARCSink) Run(ctx context.Context) error {
	if s.direct != nil {
		return s.direct.run(ctx)
	}
	c, err := EnsureWARC(ctx, s.o.JS, s.o.Names)
	if err != nil {
		return starting(ctx, err)
	}
	w, err := s.open()
	if err != nil {
		return err
	}
	dlq := bus.DeadLetters{JS: s.o.JS, Names: s.o.Names, Service: "archive", MaxDeliver: s.o.MaxDeliver}
	return run(ctx, c, &warcWriter{w: w, ua: s.o.UserAgent, stats: &s.Stats}, s.flush, dlq, &s.Stats, s.log())
}

// openDirect readies the sink to be handed its pages (Hand) instead of
// reading pages.fetched.
func (s *WARCSink) openDirect() error {
	w, err := s.open()
	if err != nil {
		return err
	}
	s.direct = newDirectSink(&warcWriter{w: w, ua: s.o.UserAgent, stats: &s.Stats}, &s.Stats, s.log())
	return nil
}

// Hand archives page message m (a pages.fetched message) in process; see
// directSink.hand.
func (s *WARCSink) Hand(m jetstream.Msg) error {
	if s.direct == nil {
		return errors.New("archive: WARC sink not opened to be handed pages")
	}
	return s.direct.hand(m)
}

func (s *WARCSink) log() *slog.Logger {
	if s.o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.o.Log
}

// open completes the .open files a crashed replica left in Dir and opens
// the writer.
func (s *WARCSink) open() (*warc.Writer, error) {
	if done, err := warc.Recover(s.o.Dir); err != nil {
		return nil, err
	} else if len(done) > 0 {
		s.log().Info("recovered WARC files of a stopped writer", "files", done)
	}
	host, _ := os.Hostname()
	w, err := warc.NewWriter(warc.Options{
		Dir: s.o.Dir, Prefix: s.o.Names.Prefix, MaxSize: s.o.MaxSize, MaxAge: s.o.MaxAge, GzipLevel: s.o.GzipLevel,
		Info: []warc.Field{
			{Name: "software", Value: "Trawler (https://github.com/trawlerhq/trawler)"},
			{Name: "hostname", Value: host},
			{Name: "isPartOf", Value: s.o.Names.Prefix},
			{Name: "http-header-user-agent", Value: clean(s.o.UserAgent)},
			{Name: "description", Value: "HTTP heads rebuilt from Trawler's fetch metadata; bodies as received, Content-Encoding undone"},
		},
	})
	return w, err
}

type warcWriter struct {
	w     *warc.Writer
	ua    string
	stats *Stats
}

func (ww *warcWriter) write(batch []jetstream.Msg) (map[jetstream.Msg]error, error) {
	var bad map[jetstream.Msg]error
	for _, m := range batch {
		recs, err := pageRecords(m, ww.ua)
		if err == nil {
			err = ww.w.Write(recs...)
			if err != nil && !isRecordError(err) {
				return nil, err // the disk, not the page: retry
			}
		}
		if err != nil {
			if bad == nil {
				bad = map[jetstream.Msg]error{}
			}
			bad[m] = err
			continue
		}
		ww.stats.Records.Add(int64(len(recs)))
		ww.stats.Bytes.Add(int64(len(m.Data())))
	}
	return bad, nil
}

func pageRecords(m jetstream.Msg, ua string) ([]*warc.Record, error) {
	p, err := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
	if err != nil {
		return nil, err
	}
	return Records(p, m.Data(), ua)
}

func (ww *warcWriter) sync() error        { return ww.w.Sync() }
func (ww *warcWriter) rotateIfDue() error { return ww.w.RotateIfDue() }
func (ww *warcWriter) close() error       { return ww.w.Close() }

func isRecordError(err error) bool { return errors.Is(err, warc.ErrInvalid) }
