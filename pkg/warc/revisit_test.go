package warc

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestRevisitRecords(t *testing.T) {
	body := []byte("<html>unchanged</html>")
	first := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	orig := Original{URI: "http://a.test/", Date: first, ID: "<urn:uuid:00000000-0000-4000-8000-000000000001>", PayloadDigest: Digest(body)}
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")
	for _, c := range []struct {
		profile string
		head    []byte
	}{
		{ProfileIdenticalPayload, head},
		{ProfileServerNotModified, []byte("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n")},
	} {
		r, err := NewRevisit(c.profile, "http://a.test/", first.Add(24*time.Hour), c.head, orig)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := compress(&buf, r, DefaultGzipLevel); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadAll(&buf)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: read back %d records, %v", c.profile, len(recs), err)
		}
		p := recs[0]
		for name, want := range map[string]string{
			"WARC-Type":                 "revisit",
			"WARC-Profile":              c.profile,
			"WARC-Refers-To-Target-URI": "http://a.test/",
			"WARC-Refers-To-Date":       "2026-11-01T10:00:00Z",
			"WARC-Refers-To":            orig.ID,
			"WARC-Payload-Digest":       Digest(body), // the original's, not of the empty payload
			"WARC-Block-Digest":         Digest(c.head),
			"Content-Type":              ContentTypeHTTPResponse,
		} {
			if got := p.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", c.profile, name, got, want)
			}
		}
		if !bytes.Equal(p.Block, c.head) {
			t.Errorf("%s: block %q, want the headers only", c.profile, p.Block)
		}
	}
}

func TestNewRevisitRefuses(t *testing.T) {
	orig := Original{URI: "http://a.test/", Date: time.Now()}
	for _, c := range []struct {
		profile string
		orig    Original
	}{
		{"http://example.org/my-profile", orig},
		{ProfileIdenticalPayload, orig}, // no payload digest
		{ProfileServerNotModified, Original{URI: "http://a.test/"}},
	} {
		if _, err := NewRevisit(c.profile, "http://a.test/", time.Now(), nil, c.orig); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s %+v: err %v, want ErrInvalid", c.profile, c.orig, err)
		}
	}
}
