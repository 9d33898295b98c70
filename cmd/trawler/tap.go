package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// tapCmd prints what flows on a subject without disturbing the crawl. On a
// subject of a limits or interest stream (pages.fetched, pages.parsed, dlq.*)
// it reads through an ordered consumer: ephemeral, unacknowledged, gone when
// the tap exits, so it neither takes messages from the services nor holds any
// back. Work-queue streams (discovered, frontier, fetch) refuse a second
// consumer, so there it subscribes with plain NATS: it sees each message as it
// is published, and the stream never knows.
func tapCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var maxN int
	var format string
	var all bool
	cfg, fs, err := parse("tap", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&maxN, "max", 0, "exit after this many messages (0: until interrupted)")
		fs.StringVar(&format, "format", "json", "json: one JSON object per message (subject, sequence, headers, data); raw: the data only, a newline after each")
		fs.BoolVar(&all, "all", false, "start with the oldest message the stream still holds instead of new ones (not on work-queue subjects)")
	})
	if err != nil {
		return err
	}
	if fs.NArg() != 1 || (format != "json" && format != "raw") {
		fmt.Fprintln(stderr, "usage: trawler tap [--max N] [--format json|raw] [--all] SUBJECT   (e.g. trawler.pages.parsed; a relative name gets --prefix)")
		return errUsage
	}
	subject := fs.Arg(0)
	if !strings.HasPrefix(subject, cfg.Prefix+".") {
		subject = cfg.Prefix + "." + subject // "pages.parsed" is enough
	}
	a, err := attach(cfg, "trawler-tap")
	if err != nil {
		return err
	}
	defer a.nc.Close()

	msgs, stop, err := tapSubscribe(ctx, a.js, a.nc, subject, all)
	if err != nil {
		return err
	}
	defer stop()
	if _, err := a.js.StreamNameBySubject(ctx, subject); errors.Is(err, jetstream.ErrStreamNotFound) {
		fmt.Fprintf(stderr, "trawler tap: no stream of this NATS holds %s; listening for it as a plain subject (check the name and --prefix %s: 'trawler help tap')\n", subject, cfg.Prefix)
	}
	lost := time.NewTicker(time.Second)
	defer lost.Stop()
	var downSince time.Time
	for n := 0; maxN == 0 || n < maxN; n++ {
		var m tapped
	wait:
		select {
		case <-ctx.Done():
			return nil
		case <-lost.C:
			if done, err := stillConnected(a.nc, &downSince); done {
				return err
			}
			goto wait
		case m = <-msgs:
		}
		if err := printTapped(stdout, m, a.names.Kind(m.Subject), format); err != nil {
			return err
		}
	}
	return nil
}

// busLostAfter is how long tap and status --wait wait for a lost NATS
// connection to come back before they give up with a message.
var busLostAfter = 15 * time.Second

// stillConnected tracks nc's connection: it reports done, with the error to
// return, once the connection has been down for busLostAfter (the crawl, or
// the server, is gone) or was closed.
func stillConnected(nc *nats.Conn, downSince *time.Time) (bool, error) {
	switch {
	case nc.IsClosed():
		return true, errors.New("the NATS connection was closed")
	case nc.IsConnected():
		*downSince = time.Time{}
	case downSince.IsZero():
		*downSince = time.Now()
	case time.Since(*downSince) > busLostAfter:
		return true, fmt.Errorf("lost the NATS connection %s ago and it did not come back: is the crawl (or the NATS server) still running?", busLostAfter)
	}
	return false, nil
}

// attached is a read-only connection to a crawl's NATS: unlike the
// services, tap and status do not ensure the topology, so a mistyped
// --partition-count or --prefix cannot add consumers to someone's crawl.
type attached struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	names subjects.Names
}

func attach(cfg config.Config, name string) (attached, error) {
	names, err := subjects.New(cfg.Prefix)
	if err != nil {
		return attached{}, err
	}
	url := cfg.NATSURL
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := bus.Connect(url, name, app.NATSOptions(cfg))
	if err != nil {
		return attached{}, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return attached{}, err
	}
	return attached{nc: nc, js: js, names: names}, nil
}

// tapped is one message seen by a tap.
type tapped struct {
	Subject string
	Seq     uint64 // stream sequence; 0 from a plain subscription
	Time    time.Time
	Header  nats.Header
	Data    []byte
}

// tapSubscribe delivers subject's messages: an ordered consumer when a
// non-work-queue stream holds the subject, else a core subscription.
func tapSubscribe(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, subject string, all bool) (<-chan tapped, func(), error) {
	out := make(chan tapped, 256)
	stream, err := js.StreamNameBySubject(ctx, subject)
	var info *jetstream.StreamInfo
	if err == nil {
		var st jetstream.Stream
		if st, err = js.Stream(ctx, stream); err == nil {
			info, err = st.Info(ctx)
		}
	}
	if err == nil && info.Config.Retention != jetstream.WorkQueuePolicy {
		policy := jetstream.DeliverNewPolicy
		if all {
			policy = jetstream.DeliverAllPolicy
		}
		c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subject}, DeliverPolicy: policy,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("tap %s: %w", subject, err)
		}
		cc, err := c.Consume(func(m jetstream.Msg) {
			t := tapped{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
			if md, err := m.Metadata(); err == nil {
				t.Seq, t.Time = md.Sequence.Stream, md.Timestamp
			}
			select {
			case out <- t:
			case <-ctx.Done():
			}
		})
		if err != nil {
			return nil, nil, fmt.Errorf("tap %s: %w", subject, err)
		}
		return out, cc.Stop, nil
	}
	if all {
		return nil, nil, fmt.Errorf("tap %s: --all needs a subject of a stream that is not a work queue", subject)
	}
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, fmt.Errorf("tap %s: %w", subject, err)
	}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		select {
		case out <- tapped{Subject: m.Subject, Time: time.Now().UTC(), Header: m.Header, Data: m.Data}:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("tap %s: %w", subject, err)
	}
	if err := nc.Flush(); err != nil { // the subscription is in place before we return
		return nil, nil, err
	}
	return out, func() { _ = sub.Unsubscribe() }, nil
}

// printTapped writes one tapped message. In the json format a message of
// one of the crawl's kinds (subjects.Names.Kind) is decoded through
// pkg/messages: its line names the kind, and a message that does not decode
// (a poison message, another version) is still printed, with the decoder's
// error in "error". The data is shown as it came, not re-encoded, so fields
// of a newer writer stay visible.
func printTapped(w io.Writer, m tapped, kind, format string) error {
	if format == "raw" {
		_, err := w.Write(append(append([]byte(nil), m.Data...), '\n'))
		return err
	}
	rec := tapRecord{Subject: m.Subject, Seq: m.Seq, Time: m.Time, Kind: kind}
	page := m.Header.Get(messages.HeaderPage)
	if len(m.Header) > 0 {
		rec.Headers = map[string]string{}
		for k, v := range m.Header {
			rec.Headers[k] = strings.Join(v, ", ")
		}
		if json.Valid([]byte(page)) {
			rec.Page = json.RawMessage(page) // shown decoded, not as an escaped string
			delete(rec.Headers, messages.HeaderPage)
		}
	}
	switch kind {
	case "":
	case messages.KindPage: // the metadata is the header; the data is the body
		if _, err := messages.DecodeKind(kind, []byte(page)); err != nil {
			rec.Error = err.Error()
		}
	default:
		if _, err := messages.DecodeKind(kind, m.Data); err != nil {
			rec.Error = err.Error()
		}
	}
	switch {
	case json.Valid(m.Data) && len(m.Data) > 0:
		rec.Data = json.RawMessage(m.Data)
	case utf8.Valid(m.Data):
		rec.DataText = string(m.Data)
	default:
		rec.DataBase64 = base64.StdEncoding.EncodeToString(m.Data)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // bodies are HTML: keep them readable
	return enc.Encode(rec)
}

// tapRecord is one line of `tap --format json`: the data as JSON when it is
// JSON, else as text when it is UTF-8, else in base64; the message kind of
// the subject, and why the message does not decode as that kind.
type tapRecord struct {
	Subject    string            `json:"subject"`
	Seq        uint64            `json:"seq,omitempty"`
	Time       time.Time         `json:"time"`
	Kind       string            `json:"kind,omitempty"`
	Error      string            `json:"error,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Page       json.RawMessage   `json:"page,omitempty"`
	Data       json.RawMessage   `json:"data,omitempty"`
	DataText   string            `json:"data_text,omitempty"`
	DataBase64 string            `json:"data_base64,omitempty"`
}
