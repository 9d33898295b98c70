package fetcher

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// Issue 19 #5: oversized header values never reach the page's NATS header:
// a Location over the URL limit (--max-url-length) is an error of the page
// (recorded, not followed, not retried), headers over the transport's limit
// are a protocol error, a huge Content-Type is cut to maxHeaderValue, and an
// error quoting what the server sent is cut to maxErrorText.
func TestOversizedHeadersAreBoundedOrAPageError(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/long-location":
			w.Header().Set("Location", "/"+strings.Repeat("l", 20<<10))
			w.WriteHeader(http.StatusFound)
		case "/huge-location":
			w.Header().Set("Location", "/"+strings.Repeat("h", 900<<10))
			w.WriteHeader(http.StatusFound)
		case "/huge-type":
			w.Header().Set("Content-Type", "text/html; x="+strings.Repeat("t", 70<<10))
			w.Write([]byte("<p>ok</p>"))
		case "/" + strings.Repeat("r", 200) + "/":
			// Short as sent, too long once resolved against the request URL.
			w.Header().Set("Location", strings.Repeat("s", 100))
			w.WriteHeader(http.StatusMovedPermanently)
		case "/fine":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		}
	})
	c := newClient(t, HTTPOptions{AllowPrivate: true, MaxURLLength: 256})
	names, _ := subjects.New("test")
	for _, tt := range []struct {
		path, wantErr string
	}{
		{"/long-location", "redirect over the URL length limit: Location of 20481 bytes, over the 256-byte URL limit"},
		{"/huge-location", "header"},
		{"/huge-type", ""},
		{"/" + strings.Repeat("r", 200) + "/", "target of 3"},
		{"/fine", ""},
	} {
		r := c.Fetch(context.Background(), srv.URL+tt.path)
		switch {
		case tt.wantErr == "" && r.Err != nil:
			t.Errorf("%s: %v", tt.path, r.Err)
		case tt.wantErr != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tt.wantErr) || r.ErrKind != KindProtocol):
			t.Errorf("%s: err %v (kind %q), want a protocol error with %q", tt.path, r.Err, r.ErrKind, tt.wantErr)
		}
		if len(r.Location) > 256 || len(r.ContentType) > maxHeaderValue || (tt.wantErr != "" && r.Location != "") {
			t.Errorf("%s: Location of %d bytes, Content-Type of %d", tt.path, len(r.Location), len(r.ContentType))
		}
		// The page message's metadata header stays small.
		s := &Service{}
		p := s.page(messages.FetchTask{URL: srv.URL + tt.path}, r)
		m := pageMsg(names, p, r.Body)
		if n := len(m.Header.Get(messages.HeaderPage)); n > 32<<10 {
			t.Errorf("%s: Trawler-Page header of %d bytes", tt.path, n)
		}
		var back messages.Page
		if err := json.Unmarshal([]byte(m.Header.Get(messages.HeaderPage)), &back); err != nil || (tt.wantErr != "" && back.Error == "") {
			t.Errorf("%s: page record %+v, %v", tt.path, back, err)
		}
	}
}

// BenchmarkOversizedHeaders measures what a response with a 900 KB
// Location and one with a 70 KB Content-Type cost the fetcher, request to
// page message (issue 19 #5): time and bytes allocated per pair, against a
// plain redirect and page in the same run (BenchmarkOversizedHeaders/plain).
//
//	go test -run '^$' -bench OversizedHeaders -benchmem ./services/fetcher/
func BenchmarkOversizedHeaders(b *testing.B) {
	srv := serve(b, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/huge-location":
			w.Header().Set("Location", "/"+strings.Repeat("h", 900<<10))
			w.WriteHeader(http.StatusFound)
		case "/huge-type":
			w.Header().Set("Content-Type", "text/html; x="+strings.Repeat("t", 70<<10))
			w.Write([]byte("<p>ok</p>"))
		case "/location":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		default:
			w.Write([]byte("<p>ok</p>"))
		}
	})
	c := newClient(b, HTTPOptions{AllowPrivate: true, MaxURLLength: 256})
	names, _ := subjects.New("test")
	for _, bc := range []struct{ name, redirect, page string }{
		{"plain", "/location", "/type"},
		{"oversized", "/huge-location", "/huge-type"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			header := 0
			for b.Loop() {
				for _, path := range []string{bc.redirect, bc.page} {
					r := c.Fetch(context.Background(), srv.URL+path)
					s := &Service{}
					m := pageMsg(names, s.page(messages.FetchTask{URL: srv.URL + path}, r), r.Body)
					header = max(header, len(m.Header.Get(messages.HeaderPage)))
				}
			}
			b.ReportMetric(float64(header), "max-page-header-bytes")
		})
	}
}
