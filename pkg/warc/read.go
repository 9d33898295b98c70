package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Parsed is a record as read back: its header fields in order and its block.
type Parsed struct {
	Fields []Field
	Block  []byte
	End    int64 // offset in the compressed file just past the record's gzip member
}

// Get returns the first value of a header field, case-insensitively.
func (p Parsed) Get(name string) string {
	for _, f := range p.Fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// countingReader counts the bytes gzip takes. It is an io.ByteReader, so
// gzip reads no further than the end of each member.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// maxRecord bounds one decompressed member read back, against a bomb.
const maxRecord = 1 << 30

// ReadAll reads the records of a gzipped WARC file written one record per
// member (as Writer does), checking each record's layout, Content-Length and
// digests. It returns the records read before the first damaged one and an
// error describing the damage, if any.
func ReadAll(r io.Reader) ([]Parsed, error) {
	cr := &countingReader{r: bufio.NewReader(r)}
	var out []Parsed
	var z *gzip.Reader
	for {
		if _, err := cr.r.Peek(1); err == io.EOF {
			return out, nil
		}
		var err error
		if z == nil {
			z, err = gzip.NewReader(cr)
		} else {
			err = z.Reset(cr)
		}
		if err != nil {
			return out, fmt.Errorf("record %d at byte %d: gzip: %w", len(out)+1, cr.n, err)
		}
		z.Multistream(false)
		raw, err := io.ReadAll(io.LimitReader(z, maxRecord+1))
		if err != nil {
			return out, fmt.Errorf("record %d: gzip: %w", len(out)+1, err)
		}
		if len(raw) > maxRecord {
			return out, fmt.Errorf("record %d: larger than %d bytes", len(out)+1, maxRecord)
		}
		p, err := parseRecord(raw)
		if err != nil {
			return out, fmt.Errorf("record %d: %w", len(out)+1, err)
		}
		p.End = cr.n
		out = append(out, p)
	}
}

// parseRecord checks one uncompressed record: version line, fields,
// Content-Length, block, the closing CRLFs and the digests.
func parseRecord(raw []byte) (Parsed, error) {
	var p Parsed
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		return p, errors.New("header does not end")
	}
	lines := strings.Split(string(raw[:end]), "\r\n")
	if lines[0] != Version && lines[0] != "WARC/1.0" {
		return p, fmt.Errorf("version line %q", lines[0])
	}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return p, fmt.Errorf("header line %q", l)
		}
		p.Fields = append(p.Fields, Field{name, strings.TrimSpace(value)})
	}
	n, err := strconv.Atoi(p.Get("Content-Length"))
	if err != nil || n < 0 {
		return p, fmt.Errorf("Content-Length %q", p.Get("Content-Length"))
	}
	body := raw[end+4:]
	if len(body) != n+4 || !bytes.HasSuffix(body, []byte("\r\n\r\n")) {
		return p, fmt.Errorf("block of %d bytes and end marker, want Content-Length %d + 4", len(body), n)
	}
	p.Block = body[:n]
	if d := p.Get("WARC-Block-Digest"); d != "" && d != Digest(p.Block) {
		return p, fmt.Errorf("WARC-Block-Digest %s, block hashes to %s", d, Digest(p.Block))
	}
	// A revisit's payload digest is the original record's: its block holds
	// the headers only.
	if d := p.Get("WARC-Payload-Digest"); d != "" && p.Get("WARC-Type") != TypeRevisit {
		i := bytes.Index(p.Block, []byte("\r\n\r\n"))
		if i < 0 || d != Digest(p.Block[i+4:]) {
			return p, fmt.Errorf("WARC-Payload-Digest %s does not match the payload", d)
		}
	}
	return p, nil
}

// Recover finishes the .open files left in dir by writers that died: each is
// cut back to its last complete, verified record and renamed to its final
// name, or removed when no record beyond its warcinfo survives. Files locked
// by a live writer are left alone. It returns the files it completed.
//
// Recovering (rather than ignoring) matters: a sink acknowledges records
// once they are synced, so the records of an .open file may exist nowhere
// else any more.
func Recover(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+Suffix+OpenSuffix))
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, path := range paths {
		final, err := recoverFile(path)
		if err != nil {
			errs = append(errs, err)
		} else if final != "" {
			done = append(done, final)
		}
	}
	return done, errors.Join(errs...)
}

func recoverFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("warc: recover: %w", err)
	}
	defer f.Close()
	if lock(f) != nil {
		return "", nil // a live writer's
	}
	recs, _ := ReadAll(f) // damage after the last good record is what we cut
	if len(recs) < 2 {
		f.Close()
		if err := os.Remove(path); err != nil {
			return "", fmt.Errorf("warc: recover: %w", err)
		}
		return "", nil
	}
	if err := f.Truncate(recs[len(recs)-1].End); err != nil {
		return "", fmt.Errorf("warc: recover %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("warc: recover %s: %w", path, err)
	}
	final := strings.TrimSuffix(path, OpenSuffix)
	if err := publish(path, final); err != nil {
		return "", err
	}
	return final, nil
}
