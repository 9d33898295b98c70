package archive_test

import (
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/warc"
)

// Revisit records as pkg/warc writes them read back with an independent
// reader, webrecorder's warcio: type, profile, the original they refer to,
// the HTTP head parsed, no payload, and the original's payload digest
// declared (issue 21; the archive does not write them yet).
func TestRevisitRecordsReadByWarcio(t *testing.T) {
	warcio(t) // skips without node and warcio, except in CI
	dir := t.TempDir()
	w, err := warc.NewWriter(warc.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("<html>the same page</html>")
	first := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	orig := warc.Original{URI: "http://a.test/", Date: first, ID: warc.NewID(), PayloadDigest: warc.Digest(body)}
	resp := &warc.Record{Type: warc.TypeResponse, ID: orig.ID, Date: first, TargetURI: orig.URI, ContentType: warc.ContentTypeHTTPResponse,
		Head: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"v1\"\r\n\r\n"), Payload: body}
	same, err := warc.NewRevisit(warc.ProfileIdenticalPayload, orig.URI, first.Add(time.Hour),
		[]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), orig)
	if err != nil {
		t.Fatal(err)
	}
	notModified, err := warc.NewRevisit(warc.ProfileServerNotModified, orig.URI, first.Add(2*time.Hour),
		[]byte("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n"), orig)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(resp, same, notModified); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readWithWarcio(t, w.Completed())
	var revisits []warcioRecord
	for _, r := range recs {
		if r.Type == "revisit" {
			revisits = append(revisits, r)
		}
	}
	if len(revisits) != 2 {
		t.Fatalf("warcio read %d revisit records of %d, want 2", len(revisits), len(recs))
	}
	for i, want := range []struct {
		profile string
		status  int
	}{{warc.ProfileIdenticalPayload, 200}, {warc.ProfileServerNotModified, 304}} {
		r := revisits[i]
		if r.Headers["warc-profile"] != want.profile || r.Headers["warc-refers-to-target-uri"] != orig.URI ||
			r.Headers["warc-refers-to-date"] != "2026-11-01T10:00:00Z" || r.Headers["warc-refers-to"] != orig.ID {
			t.Errorf("revisit %d headers %v", i, r.Headers)
		}
		if r.Status != want.status || r.Payload != "" {
			t.Errorf("revisit %d: status %d, payload %q; want %d and none", i, r.Status, r.Payload, want.status)
		}
		if r.BlockDigest != r.DeclaredBlockDigest || r.DeclaredPayloadDigest != orig.PayloadDigest {
			t.Errorf("revisit %d: block digest %s declared %s; payload digest declared %s, want the original's %s",
				i, r.BlockDigest, r.DeclaredBlockDigest, r.DeclaredPayloadDigest, orig.PayloadDigest)
		}
	}
}
