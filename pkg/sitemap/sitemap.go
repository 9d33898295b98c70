// Package sitemap reads sitemaps (sitemaps.org protocol 0.9): URL sets,
// sitemap index files and plain-text sitemaps, gzipped or not, streaming one
// entry at a time so that a 50 MB sitemap is never held whole.
//
// The protocol's limits are enforced as it states them: at most 50,000 URLs
// and 50 MB uncompressed per file. A file past either limit yields the entries
// before the limit and an error naming it; a gzip bomb stops at the byte limit.
// How deep an index may nest and how many URLs a host may contribute are the
// caller's to cap: it sees each file's Kind and counts entries.
package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
)

// The protocol's per-file limits.
const (
	MaxURLs  = 50_000
	MaxBytes = 50 << 20
)

// Kind says what a sitemap file lists.
type Kind int

const (
	// URLSet lists pages (<urlset>, or a plain-text sitemap).
	URLSet Kind = iota + 1
	// Index lists other sitemaps (<sitemapindex>).
	Index
)

func (k Kind) String() string {
	switch k {
	case URLSet:
		return "urlset"
	case Index:
		return "sitemapindex"
	}
	return "unknown"
}

// Entry is one <url> of a URL set or one <sitemap> of an index.
type Entry struct {
	Loc        string    // as written, trimmed; not resolved or checked
	LastMod    time.Time // zero when absent or unreadable
	ChangeFreq string    // lower-cased: always, hourly, daily, weekly, monthly, yearly, never; "" when absent or not one of those
	Priority   float64   // 0.0-1.0; -1 when absent or unreadable
}

// Limits bound one file. Zero fields take the protocol's limits.
type Limits struct {
	MaxURLs  int   // entries per file
	MaxBytes int64 // uncompressed bytes per file
}

// Errors a caller can tell apart with errors.Is.
var (
	ErrTooManyURLs = errors.New("sitemap: more entries than the limit")
	ErrTooLarge    = errors.New("sitemap: larger than the limit")
	ErrNotSitemap  = errors.New("sitemap: the root element is neither urlset nor sitemapindex")
)

// Parse reads one sitemap file from r, calling fn for each entry in file
// order, and returns the file's kind. It stops at fn's first error and
// returns it. Entries without a <loc> are skipped, as are elements of
// extension namespaces (image:loc, news:...) and unknown elements.
func Parse(r io.Reader, lim Limits, fn func(Entry) error) (Kind, error) {
	if lim.MaxURLs <= 0 {
		lim.MaxURLs = MaxURLs
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = MaxBytes
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("sitemap: gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	lr := &limitReader{r: br, left: lim.MaxBytes, limit: lim.MaxBytes}
	body := bufio.NewReader(lr)
	first, err := firstNonSpace(body)
	if err != nil {
		return 0, err
	}
	if first != '<' {
		return URLSet, parseText(body, lim, fn)
	}
	return parseXML(body, lim, fn)
}

// firstNonSpace peeks past leading white space and a byte-order mark.
func firstNonSpace(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.Peek(1)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, errors.New("sitemap: the file is empty")
			}
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			r.ReadByte()
			continue
		case 0xef: // UTF-8 byte-order mark
			if bom, _ := r.Peek(3); bytes.Equal(bom, []byte{0xef, 0xbb, 0xbf}) {
				r.Discard(3)
				continue
			}
		}
		return b[0], nil
	}
}

// parseText reads a plain-text sitemap: one URL per line.
func parseText(r *bufio.Reader, lim Limits, fn func(Entry) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10) // a URL is at most 2,048 bytes by the protocol
	n := 0
	for sc.Scan() {
		loc := strings.TrimSpace(sc.Text())
		if loc == "" {
			continue
		}
		if n++; n > lim.MaxURLs {
			return fmt.Errorf("%w: stopped after %d", ErrTooManyURLs, lim.MaxURLs)
		}
		if err := fn(Entry{Loc: loc, Priority: -1}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sitemap: text line %d: %w", n+1, err)
	}
	return nil
}

// parseXML walks the token stream: the root at depth 1, <url>/<sitemap> at
// depth 2, their fields at depth 3, all in the root's namespace.
func parseXML(r io.Reader, lim Limits, fn func(Entry) error) (Kind, error) {
	d := xml.NewDecoder(r)
	d.CharsetReader = charset.NewReaderLabel
	// Lenient, as crawlers must be: a bare & in a query string is the
	// commonest error in sitemaps written by hand, and costs no URL.
	d.Strict = false
	var (
		kind  Kind
		space string // the root's namespace; fields elsewhere are extensions
		depth int
		in    bool // inside a <url> or <sitemap>
		e     Entry
		field string // the depth-3 element being read, "" when none
		text  strings.Builder
		n     int
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			if kind == 0 {
				return 0, ErrNotSitemap
			}
			return kind, nil
		}
		if err != nil {
			return kind, xmlError(d, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1:
				switch t.Name.Local {
				case "urlset":
					kind = URLSet
				case "sitemapindex":
					kind = Index
				default:
					return 0, fmt.Errorf("%w: <%s>", ErrNotSitemap, t.Name.Local)
				}
				space = t.Name.Space
			case depth == 2 && t.Name.Space == space &&
				(kind == URLSet && t.Name.Local == "url" || kind == Index && t.Name.Local == "sitemap"):
				in, e = true, Entry{Priority: -1}
			case depth == 3 && in && t.Name.Space == space:
				field = t.Name.Local
				text.Reset()
			}
		case xml.CharData:
			if field != "" && text.Len() < 4096 {
				text.Write(t)
			}
		case xml.EndElement:
			switch {
			case depth == 3 && field != "":
				e.set(field, strings.TrimSpace(text.String()))
				field = ""
			case depth == 2 && in:
				in = false
				if e.Loc != "" {
					if n++; n > lim.MaxURLs {
						return kind, fmt.Errorf("%w: stopped after %d", ErrTooManyURLs, lim.MaxURLs)
					}
					if err := fn(e); err != nil {
						return kind, err
					}
				}
			}
			depth--
		}
	}
}

func (e *Entry) set(field, v string) {
	switch field {
	case "loc":
		e.Loc = v
	case "lastmod":
		e.LastMod = parseW3CDate(v)
	case "changefreq":
		switch f := strings.ToLower(v); f {
		case "always", "hourly", "daily", "weekly", "monthly", "yearly", "never":
			e.ChangeFreq = f
		}
	case "priority":
		if p, err := strconv.ParseFloat(v, 64); err == nil && p >= 0 && p <= 1 {
			e.Priority = p
		}
	}
}

// parseW3CDate reads the W3C Datetime forms the protocol allows, from a year
// alone to seconds with a fraction and a zone.
func parseW3CDate(v string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t
		}
	}
	return time.Time{}
}

func xmlError(d *xml.Decoder, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("sitemap: not well-formed XML at line %d: %s", se.Line, se.Msg)
	}
	line, _ := d.InputPos()
	return fmt.Errorf("sitemap: line %d: %w", line, err)
}

// limitReader fails, rather than ending quietly, past its limit: a sitemap
// cut at 50 MB must not read as a whole one.
type limitReader struct {
	r           io.Reader
	left, limit int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// Exactly at the limit is allowed: fail only if more follows.
		var probe [1]byte
		n, err := l.r.Read(probe[:])
		if n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("%w: more than %d bytes uncompressed", ErrTooLarge, l.limit)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
