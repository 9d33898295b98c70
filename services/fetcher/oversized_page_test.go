package fetcher

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// hostilePageServer serves issue 19 #5's responses and counts the requests
// per path.
func hostilePageServer(t *testing.T) (base string, hits func(path string) int) {
	var mu sync.Mutex
	count := map[string]int{}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		count[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/huge-location": // over the transport's header limit
			w.Header().Set("Location", "/"+strings.Repeat("h", 900<<10))
			w.WriteHeader(http.StatusFound)
		case "/long-location": // over --max-url-length
			w.Header().Set("Location", "/"+strings.Repeat("l", 20<<10))
			w.WriteHeader(http.StatusMovedPermanently)
		case "/huge-type":
			w.Header().Set("Content-Type", "text/html; x="+strings.Repeat("t", 70<<10))
			io.WriteString(w, "<p>ok</p>")
		case "/escaped-headers":
			// Every kept header at its 1 KiB bound, in bytes JSON escapes
			// six times over (invalid UTF-8 becomes "\ufffd"): the metadata
			// would pass JetStream's 64 KiB.
			for _, name := range keptHeaders {
				if name != "Content-Length" {
					w.Header().Set(name, strings.Repeat("\xff", 1000))
				}
			}
			w.Header().Set("Content-Type", "text/html; x="+strings.Repeat("\xff", 1000))
			for range 100 { // unknown codings, kept as they are: their names, bounded
				w.Header().Add("Content-Encoding", strings.Repeat("z", 1000))
			}
			io.WriteString(w, "<p>ok</p>")
		case "/big":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<p>"+strings.Repeat("b", 9<<20)+"</p>")
		}
	})
	return srv.URL, func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return count[path]
	}
}

// startFetcher runs a fetcher against an embedded JetStream.
func startFetcher(t *testing.T, o Options) (jetstream.JetStream, subjects.Names) {
	t.Helper()
	js, names := testbus.Start(t, 1)
	o.JS, o.Names, o.Workers, o.MaxDeliver, o.IgnoreRobots = js, names, 2, 10, true
	o.HTTP.Timeout, o.HTTP.AllowPrivate = 10*time.Second, true
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return js, names
}

func publishTask(t *testing.T, js jetstream.JetStream, names subjects.Names, id, url string) {
	t.Helper()
	data, _ := json.Marshal(messages.FetchTask{V: 1, ID: id, Partition: 0, Host: "h", URL: url, Attempt: 1, Deadline: time.Now().Add(time.Minute)})
	testbus.Publish(t, js, names.Fetch(0), data)
}

// records takes n page records from the parser's consumer, by task ID.
func records(t *testing.T, js jetstream.JetStream, names subjects.Names, n int) map[string]jetstream.Msg {
	t.Helper()
	out := map[string]jetstream.Msg{}
	for len(out) < n {
		m := testbus.Next(t, js, names.StreamPages(), names.ConsumerParser(), 20*time.Second)
		if m == nil {
			t.Fatalf("%d page records, want %d", len(out), n)
		}
		p, err := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
		if err != nil {
			t.Fatal(err)
		}
		out[p.TaskID] = m
	}
	return out
}

// settled waits until the fetcher has acked every task, and checks that
// nothing went to the dead-letter subject.
func settled(t *testing.T, js jetstream.JetStream, names subjects.Names) {
	t.Helper()
	testbus.Settled(t, js, names, names.StreamFetch(), names.ConsumerFetcher())
}

// Issue 19 #5 end to end: each hostile response is fetched once and
// recorded on pages.fetched (with the error, or with its values cut), its
// task acked and reported done; nothing is retried or dead-lettered.
func TestOversizedHeadersRecordedOnceNeverRetried(t *testing.T) {
	base, hits := hostilePageServer(t)
	garbled := connServer(t, func(conn net.Conn, _ *http.Request) {
		// A malformed status line, which Go's error quotes.
		conn.Write([]byte("HTTP/1.1 " + strings.Repeat("9", 100<<10) + " OK\r\n\r\n"))
	})
	js, names := startFetcher(t, Options{MaxPayload: bus.EmbeddedMaxPayload, HTTP: HTTPOptions{MaxURLLength: 256}})
	paths := []string{"/huge-location", "/long-location", "/huge-type", "/escaped-headers"}
	for _, p := range paths {
		publishTask(t, js, names, p, base+p)
	}
	publishTask(t, js, names, "garbled", garbled)
	recs := records(t, js, names, len(paths)+1)
	settled(t, js, names)
	for _, p := range paths {
		if n := hits(p); n != 1 {
			t.Errorf("%s fetched %d times, want once", p, n)
		}
	}
	for id, m := range recs {
		if n := len(m.Headers().Get(messages.HeaderPage)); n > maxPageHeader {
			t.Errorf("%s: Trawler-Page of %d bytes", id, n)
		}
		p, _ := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
		if len(p.Error) > maxErrorText+len("…") {
			t.Errorf("%s: error of %d bytes", id, len(p.Error))
		}
		switch id {
		case "/huge-location", "/long-location", "garbled":
			if p.Error == "" || p.ErrorKind != KindProtocol || p.Location != "" {
				t.Errorf("%s: want a protocol error without a location, got %+v", id, p)
			}
		case "/huge-type":
			if p.Error != "" || p.Status != 200 || len(p.ContentType) > maxHeaderValue || string(m.Data()) != "<p>ok</p>" {
				t.Errorf("%s: %+v, body %q", id, p, m.Data())
			}
		case "/escaped-headers":
			if !strings.Contains(p.Error, "header bound") || p.Headers != nil || p.ContentType != "" || len(p.Encoding) > maxHeaderValue || p.Status != 200 || len(m.Data()) != 9 {
				t.Errorf("%s: %+v, body %q", id, p, m.Data())
			}
		}
	}
	t.Logf("recorded: %v", recs["/long-location"].Headers().Get(messages.HeaderPage))
}

// A page message over the server's max_payload (a --max-body above it that
// the fetcher was not told about) is recorded without its body, once.
func TestPageOverMaxPayloadRecordedWithoutBody(t *testing.T) {
	base, hits := hostilePageServer(t)
	js, names := startFetcher(t, Options{HTTP: HTTPOptions{MaxBodyBytes: 16 << 20}}) // MaxPayload unknown
	publishTask(t, js, names, "big", base+"/big")
	m := records(t, js, names, 1)["big"]
	settled(t, js, names)
	p, _ := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
	if !strings.Contains(p.Error, "over the NATS limits") || len(m.Data()) != 0 || !p.Truncated || p.BodySize < 9<<20 || p.Status != 200 {
		t.Errorf("page %+v with %d body bytes", p, len(m.Data()))
	}
	if n := hits("/big"); n != 1 {
		t.Errorf("fetched %d times, want once", n)
	}
	done := testbus.Next(t, js, names.StreamFrontier(), names.ConsumerFrontier(0), 5*time.Second)
	if done == nil {
		t.Fatal("no done report")
	}
}

// A robots.txt redirected to a target over --max-url-length is unavailable
// (as a redirect chain without an end is): the host is crawled, not held
// back as if robots.txt were unreachable.
func TestRobotsRedirectTooLongIsUnavailable(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/"+strings.Repeat("r", 300))
		w.WriteHeader(http.StatusMovedPermanently)
	})
	js, names := testbus.Start(t, 1)
	rc, err := openRobots(context.Background(), js, names, newClient(t, HTTPOptions{AllowPrivate: true, MaxURLLength: 256}), "Trawler/1", time.Hour, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.check(context.Background(), srv.URL+"/page")
	if err != nil || !v.Allowed || v.RetryAfter != 0 || v.GaveUp {
		t.Errorf("verdict %+v, %v; want allowed", v, err)
	}
}
