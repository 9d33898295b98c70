package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/warc"
	"github.com/trawlerhq/trawler/services/archive"
)

// Revisit records as pkg/warc writes them read back with an independent
// reader, webrecorder's warcio: type, profile, the original they refer to,
// the HTTP head parsed, no payload, and the original's payload digest
// declared (issue 21; TestSinkWritesRevisitRecords has the sink write them).
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

// Pages found unchanged on a revisit (changed false) go through the sink as
// request, revisit and metadata records (issue 21): server-not-modified for
// a 304, identical-payload-digest for the same body, both referring to the
// URL's original response by URI and date (revisit.since) and naming its
// payload digest (revisit.digest). A first visit, a changed page, and an
// unchanged page whose record does not name the original or whose body is
// not the content named, get response records. Read back with pkg/warc's
// reader and, when it is installed, with warcio.
func TestSinkWritesRevisitRecords(t *testing.T) {
	js, names := testbus.Start(t, 1)
	dir := t.TempDir()
	_, finish := startArchive(t, archive.Options{JS: js, Names: names, Dir: dir, UserAgent: "test-agent", Log: quiet()})
	const u = "http://a.test/page"
	body, body2 := []byte("<html>the same page</html>"), []byte("<html>a new page</html>")
	first := time.Date(2026, 11, 1, 10, 0, 0, 123456000, time.UTC) // with microseconds, as WARC-Date keeps them
	no, yes := false, true
	record := func(b []byte, since time.Time) *messages.Revisit {
		return &messages.Revisit{Visits: 2, ETag: `"v1"`, Digest: warc.Digest(b), Since: since}
	}
	pages := []struct {
		page messages.Page
		body []byte
		want string // the record in place of a response, "" for a response
	}{
		{messages.Page{TaskID: "first", URL: u, Status: 200, Revisit: record(body, first)}, body, ""},
		{messages.Page{TaskID: "same", URL: u, Status: 200, Changed: &no, Revisit: record(body, first)}, body, warc.ProfileIdenticalPayload},
		{messages.Page{TaskID: "304", URL: u, Status: 304, Changed: &no, Revisit: record(body, first)}, nil, warc.ProfileServerNotModified},
		{messages.Page{TaskID: "changed", URL: u, Status: 200, Changed: &yes, Revisit: record(body2, first.Add(3*time.Hour))}, body2, ""},
		// Unchanged, says the page, but its body is not the content its
		// record names: the body is kept.
		{messages.Page{TaskID: "other-body", URL: u, Status: 200, Changed: &no, Revisit: record(body, first)}, body2, ""},
		// Unchanged, but when the original was fetched is not known: a
		// revisit could not refer to it.
		{messages.Page{TaskID: "no-since", URL: u, Status: 200, Changed: &no, Revisit: record(body, time.Time{})}, body, ""},
	}
	for i, p := range pages {
		p.page.V, p.page.Host, p.page.IP, p.page.BodySize = messages.Version, "a.test", "127.0.0.2", len(p.body)
		p.page.FetchedAt = first.Add(time.Duration(i) * time.Hour)
		p.page.Headers = map[string]string{"ETag": `"v1"`}
		if p.page.Status == 200 {
			p.page.ContentType, p.page.Headers["Content-Type"] = "text/html", "text/html"
		}
		meta, _ := json.Marshal(p.page)
		testbus.Publish(t, js, names.PagesFetched(), p.body, messages.HeaderPage, string(meta))
	}
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n, err := archive.Pending(context.Background(), js, names); err != nil || n != 0 {
			return fmt.Errorf("still %d pending (%v)", n, err)
		}
		return nil
	})
	if err := finish(true); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+warc.Suffix))
	if len(files) != 1 {
		t.Fatalf("WARC files %v", files)
	}

	// pkg/warc's reader checks each record's layout, length and digests.
	fh, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	recs, err := warc.ReadAll(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Each page's records by its task ID (in its metadata record), in
	// their order in the file.
	at := map[string]int{}
	for i, r := range recs {
		at[r.Get("WARC-Record-ID")] = i
	}
	byTask := map[string][]warc.Parsed{}
	for i, r := range recs {
		if r.Get("WARC-Type") != warc.TypeMetadata {
			continue
		}
		task, _, _ := strings.Cut(strings.TrimPrefix(string(r.Block), "trawler-task-id: "), "\r\n")
		main, ok := at[r.Get("WARC-Concurrent-To")]
		if !ok || main == 0 || recs[main-1].Get("WARC-Type") != warc.TypeRequest || main != i-1 ||
			recs[main-1].Get("WARC-Concurrent-To") != r.Get("WARC-Concurrent-To") {
			t.Fatalf("%s: records not request, response or revisit, metadata (record %d concurrent to record %d)", task, i, main)
		}
		byTask[task] = recs[main-1 : i+1]
	}
	originalDate := ""
	for _, p := range pages {
		rs := byTask[p.page.TaskID]
		if len(rs) != 3 {
			t.Fatalf("%s: %d records", p.page.TaskID, len(rs))
		}
		r := rs[1]
		if p.page.TaskID == "first" {
			originalDate = r.Get("WARC-Date")
		}
		if p.want == "" {
			if r.Get("WARC-Type") != warc.TypeResponse || !bytes.HasSuffix(r.Block, p.body) || r.Get("WARC-Payload-Digest") != warc.Digest(p.body) {
				t.Errorf("%s: a %s record of %d bytes, want the response with its body", p.page.TaskID, r.Get("WARC-Type"), len(r.Block))
			}
			continue
		}
		status := fmt.Sprintf("HTTP/1.1 %d %s\r\n", p.page.Status, http.StatusText(p.page.Status))
		for _, f := range []struct{ name, want string }{
			{"WARC-Type", warc.TypeRevisit},
			{"WARC-Target-URI", u},
			{"WARC-Profile", p.want},
			{"WARC-Refers-To-Target-URI", u},
			{"WARC-Refers-To-Date", originalDate},
			{"WARC-Payload-Digest", warc.Digest(body)},
			{"WARC-IP-Address", "127.0.0.2"},
			{"Content-Type", warc.ContentTypeHTTPResponse},
		} {
			if got := r.Get(f.name); got != f.want {
				t.Errorf("%s: %s %q, want %q", p.page.TaskID, f.name, got, f.want)
			}
		}
		if !bytes.HasPrefix(r.Block, []byte(status)) || !bytes.HasSuffix(r.Block, []byte("\r\n\r\n")) ||
			!bytes.Contains(r.Block, []byte("Etag: \"v1\"\r\n")) || bytes.Contains(r.Block, body) {
			t.Errorf("%s: revisit block %q, want the new HTTP head alone", p.page.TaskID, r.Block)
		}
		if rs[0].Get("WARC-Target-URI") != u || !bytes.HasPrefix(rs[0].Block, []byte("GET /page HTTP/1.1\r\n")) {
			t.Errorf("%s: request record %q", p.page.TaskID, rs[0].Block)
		}
	}
	if originalDate != "2026-11-01T10:00:00.123456Z" {
		t.Errorf("the original response's WARC-Date %q", originalDate)
	}

	t.Run("warcio", func(t *testing.T) {
		var revisits []warcioRecord
		for _, r := range readWithWarcio(t, files) { // skips without node and warcio, except in CI
			if r.DeclaredBlockDigest != r.BlockDigest || r.ContentLength != r.BlockLength {
				t.Errorf("%s %s: block digest %s declared %s, %d bytes of %d", r.Type, r.ID, r.BlockDigest, r.DeclaredBlockDigest, r.BlockLength, r.ContentLength)
			}
			if r.Type == "revisit" {
				revisits = append(revisits, r)
			}
		}
		if len(revisits) != 2 {
			t.Fatalf("warcio read %d revisit records, want 2", len(revisits))
		}
		for i, want := range []struct {
			profile string
			status  int
		}{{warc.ProfileIdenticalPayload, 200}, {warc.ProfileServerNotModified, 304}} {
			r := revisits[i]
			if r.Headers["warc-profile"] != want.profile || r.Headers["warc-refers-to-target-uri"] != u ||
				r.Headers["warc-refers-to-date"] != originalDate || r.DeclaredPayloadDigest != warc.Digest(body) {
				t.Errorf("revisit %d headers %v", i, r.Headers)
			}
			if r.Status != want.status || r.Payload != "" || r.HTTPHeaders["etag"] != `"v1"` {
				t.Errorf("revisit %d: status %d, payload %q, HTTP headers %v; want %d, none, the ETag", i, r.Status, r.Payload, r.HTTPHeaders, want.status)
			}
		}
	})
}
