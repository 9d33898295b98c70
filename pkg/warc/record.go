// Package warc writes WARC 1.1 files (ISO 28500:2017): records with their
// identifiers and SHA-1 digests, one gzip member per record so readers can
// seek to any record, files rotated by size and age and made visible only
// once complete.
//
// No WARC library is available from the Go module proxy, so this one follows
// the standard closely and is tested against its examples and against
// webrecorder's warcio reader (services/archive).
package warc

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Version is the version line of every record this package writes.
const Version = "WARC/1.1"

// Record types of WARC 1.1 (section 6).
const (
	TypeWarcinfo = "warcinfo"
	TypeResponse = "response"
	TypeResource = "resource"
	TypeRequest  = "request"
	TypeMetadata = "metadata"
	TypeRevisit  = "revisit"
)

// Content types of the blocks this package's users write.
const (
	ContentTypeFields       = "application/warc-fields"
	ContentTypeHTTPResponse = "application/http;msgtype=response"
	ContentTypeHTTPRequest  = "application/http;msgtype=request"
)

// Field is one named field of a record header or of an
// application/warc-fields block.
type Field struct{ Name, Value string }

// Record is one WARC record before it is written. Its block is Head followed
// by Payload. For an HTTP message, Head is the start line and header fields
// up to and including the empty line, and Payload is the entity body: the
// writer then records a payload digest as well as the block digest. Records
// whose Head is nil get a block digest only.
type Record struct {
	Type        string    // WARC-Type, mandatory
	ID          string    // WARC-Record-ID, "<urn:uuid:...>"; NewID() when empty
	Date        time.Time // WARC-Date; the time of writing when zero
	TargetURI   string    // WARC-Target-URI; empty for warcinfo
	ContentType string    // Content-Type of the block; omitted when empty
	Fields      []Field   // further header fields, written in order
	Head        []byte
	Payload     []byte
	// PayloadDigest, when set, is written as WARC-Payload-Digest instead of
	// the digest of Payload: a revisit record names the payload of the
	// record it refers to, which it does not carry.
	PayloadDigest string
}

// ErrInvalid is matched (errors.Is) by the errors of records that cannot be
// written as given: a missing type, a field that would break the header.
var ErrInvalid = errors.New("warc: invalid record")

// NewID returns a fresh WARC-Record-ID: a random (version 4) UUID URN in
// angle brackets, as the standard's examples write them.
func NewID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails on supported platforms
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Digest is the labelled SHA-1 digest of data in the form WARC tools
// expect: "sha1:" and the base32 (RFC 4648) encoding of the 20 bytes.
func Digest(data ...[]byte) string {
	h := sha1.New()
	for _, d := range data {
		h.Write(d)
	}
	return "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(nil))
}

// FormatDate writes t as a WARC-Date: UTC, W3C-ISO8601, with microseconds
// when t has a fraction of a second (WARC 1.1, section 5.4, allows one).
func FormatDate(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

// Fields encodes fields as an application/warc-fields block.
func Fields(fields ...Field) ([]byte, error) {
	var b bytes.Buffer
	for _, f := range fields {
		if err := checkField(f); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		b.WriteString(f.Name)
		b.WriteString(": ")
		b.WriteString(f.Value)
		b.WriteString("\r\n")
	}
	return b.Bytes(), nil
}

// Marshal encodes r as an uncompressed WARC record: the header, the block
// and the two CRLFs that end every record. It fills ID and Date when empty
// and refuses field values that would break the header (line breaks,
// control characters), which a hostile URL or header could otherwise inject.
func Marshal(r *Record) ([]byte, error) {
	if r.Type == "" {
		return nil, fmt.Errorf("%w: no WARC-Type", ErrInvalid)
	}
	if r.ID == "" {
		r.ID = NewID()
	}
	if r.Date.IsZero() {
		r.Date = time.Now()
	}
	fields := []Field{
		{"WARC-Type", r.Type},
		{"WARC-Record-ID", r.ID},
		{"WARC-Date", FormatDate(r.Date)},
	}
	if r.TargetURI != "" {
		fields = append(fields, Field{"WARC-Target-URI", r.TargetURI})
	}
	if r.ContentType != "" {
		fields = append(fields, Field{"Content-Type", r.ContentType})
	}
	fields = append(fields, r.Fields...)
	fields = append(fields, Field{"WARC-Block-Digest", Digest(r.Head, r.Payload)})
	switch {
	case r.PayloadDigest != "":
		fields = append(fields, Field{"WARC-Payload-Digest", r.PayloadDigest})
	case r.Head != nil:
		fields = append(fields, Field{"WARC-Payload-Digest", Digest(r.Payload)})
	}
	fields = append(fields, Field{"Content-Length", strconv.Itoa(len(r.Head) + len(r.Payload))})
	head, err := Fields(fields...)
	if err != nil {
		return nil, fmt.Errorf("%s record %q: %w", r.Type, r.TargetURI, err)
	}
	out := make([]byte, 0, len(Version)+2+len(head)+2+len(r.Head)+len(r.Payload)+4)
	out = append(out, Version+"\r\n"...)
	out = append(out, head...)
	out = append(out, "\r\n"...)
	out = append(out, r.Head...)
	out = append(out, r.Payload...)
	return append(out, "\r\n\r\n"...), nil
}

// checkField enforces the grammar of section 4: a field name is a token, a
// value has no control characters (we never write folded lines).
func checkField(f Field) error {
	if f.Name == "" {
		return errors.New("empty field name")
	}
	for i := 0; i < len(f.Name); i++ {
		if !isToken(f.Name[i]) {
			return fmt.Errorf("field name %q: invalid character %q", f.Name, f.Name[i])
		}
	}
	for i := 0; i < len(f.Value); i++ {
		if c := f.Value[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Errorf("field %s: control character %q in value", f.Name, c)
		}
	}
	return nil
}

func isToken(c byte) bool {
	if c <= 0x20 || c >= 0x7f {
		return false
	}
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}':
		return false
	}
	return true
}
