package store

// The revisit schedule's stored value, shared by both stores: a queue entry
// without its URL (the entry's key holds it), in short keys and whole
// milliseconds, so that a continuous crawl's per-URL cost stays small
// (docs/operations.md, "Continuous crawls").

import (
	"fmt"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

type schedValue struct {
	Host       string  `json:"h"`
	Depth      int     `json:"d,omitempty"`
	Hops       int     `json:"o,omitempty"`
	Score      float64 `json:"s,omitempty"`
	Sitemap    bool    `json:"m,omitempty"`
	Record     bool    `json:"r,omitempty"` // Link.Revisit was set (even empty)
	Visits     int     `json:"v,omitempty"`
	IntervalMs int64   `json:"i,omitempty"`
	ETag       string  `json:"e,omitempty"`
	LastMod    string  `json:"l,omitempty"`
	Digest     string  `json:"g,omitempty"` // without its "sha1:"; "=" and the whole digest for another algorithm
	SinceMs    int64   `json:"t,omitempty"`
	ChangeFreq string  `json:"c,omitempty"`
	LastmodMs  int64   `json:"k,omitempty"`
}

const sha1Prefix = "sha1:"

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// encodeSched validates s and returns its URL and stored value.
func encodeSched(s Scheduled) (string, []byte, error) {
	q := s.Queued
	if err := validHost(q.Host); err != nil {
		return "", nil, err
	}
	if q.Link.URL == "" {
		return "", nil, fmt.Errorf("store: revisit of %s without a URL", q.Host)
	}
	v := schedValue{Host: q.Host, Depth: q.Link.Depth, Hops: q.Link.Hops, Score: q.Link.Score, Sitemap: q.Link.Sitemap}
	if r := q.Link.Revisit; r != nil {
		v.Record, v.Visits, v.IntervalMs = true, r.Visits, r.Interval.Milliseconds()
		v.ETag, v.LastMod, v.SinceMs = r.ETag, r.LastModified, unixMs(r.Since)
		v.Digest = r.Digest
		if d, ok := strings.CutPrefix(r.Digest, sha1Prefix); ok {
			v.Digest = d
		} else if r.Digest != "" {
			v.Digest = "=" + r.Digest // another algorithm: kept whole
		}
		v.ChangeFreq, v.LastmodMs = r.ChangeFreq, unixMs(r.Lastmod)
	}
	data, err := marshal(v)
	if err != nil {
		return "", nil, fmt.Errorf("store: encode revisit of %s: %w", q.Link.URL, err)
	}
	return q.Link.URL, data, nil
}

// decodeSched is the entry of url stored as data, due at due.
func decodeSched(url string, data []byte, due time.Time) (Scheduled, error) {
	var v schedValue
	if err := unmarshal(data, &v); err != nil {
		return Scheduled{}, fmt.Errorf("store: corrupt revisit entry of %s: %w", url, err)
	}
	l := messages.Link{URL: url, Depth: v.Depth, Hops: v.Hops, Score: v.Score, Sitemap: v.Sitemap}
	if v.Record {
		l.Revisit = &messages.Revisit{Visits: v.Visits, Interval: time.Duration(v.IntervalMs) * time.Millisecond,
			ETag: v.ETag, LastModified: v.LastMod, Since: fromMs(v.SinceMs), ChangeFreq: v.ChangeFreq, Lastmod: fromMs(v.LastmodMs)}
		if d, ok := strings.CutPrefix(v.Digest, "="); ok {
			l.Revisit.Digest = d
		} else if v.Digest != "" {
			l.Revisit.Digest = sha1Prefix + v.Digest
		}
	}
	return Scheduled{Due: due, Queued: Queued{Host: v.Host, Link: l, Attempt: 1}}, nil
}
