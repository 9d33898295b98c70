// Package logging builds the process logger from --log-format: text for
// people at a terminal, JSON (one object per line) for log collectors in a
// cluster. Both are log/slog handlers, so fields added with With — service,
// crawl, host, partition — come out as fields, not inside the message.
package logging

import (
	"fmt"
	"io"
	"log/slog"
)

// Formats accepted by New.
const (
	Text = "text"
	JSON = "json"
)

// Options configure New.
type Options struct {
	Format string // Text (the default when empty) or JSON
	Debug  bool   // log at debug level instead of info
	// Crawl, when set, is added to every record as the "crawl" field (the
	// --prefix), so the logs of several crawls on one cluster can be told apart.
	Crawl string
}

// New returns a logger writing to w in o.Format.
func New(w io.Writer, o Options) (*slog.Logger, error) {
	level := slog.LevelInfo
	if o.Debug {
		level = slog.LevelDebug
	}
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch o.Format {
	case Text, "":
		h = slog.NewTextHandler(w, ho)
	case JSON:
		h = slog.NewJSONHandler(w, ho)
	default:
		return nil, fmt.Errorf("log format %q: want %s or %s", o.Format, Text, JSON)
	}
	log := slog.New(h)
	if o.Crawl != "" {
		log = log.With("crawl", o.Crawl)
	}
	return log, nil
}
