package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// revisitSite serves pages that a continuous crawl revisits: /etag answers
// If-None-Match with 304, /lastmod If-Modified-Since; /same has no
// validators and the same body each time, /moving a new body each time.
type revisitSite struct {
	base string
	mu   sync.Mutex
	log  []revisitHit
	n    int // /moving's version
}

type revisitHit struct {
	path, ifNoneMatch, ifModifiedSince string
	status                             int
}

const revisitLastMod = "Mon, 02 Nov 2026 10:00:00 GMT"

func (s *revisitSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hit := revisitHit{path: r.URL.Path, ifNoneMatch: r.Header.Get("If-None-Match"), ifModifiedSince: r.Header.Get("If-Modified-Since"), status: 200}
	defer func() {
		s.mu.Lock()
		s.log = append(s.log, hit)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/html")
	page := func(body string) { fmt.Fprintf(w, "<html><body>%s</body></html>", body) }
	switch r.URL.Path {
	case "/":
		page(`<a href="/etag">e</a> <a href="/lastmod">l</a> <a href="/same">s</a> <a href="/moving">m</a>`)
	case "/etag":
		if hit.ifNoneMatch == `"e1"` {
			hit.status = 304
			w.WriteHeader(304)
			return
		}
		w.Header().Set("ETag", `"e1"`)
		page("etag page")
	case "/lastmod":
		if hit.ifModifiedSince == revisitLastMod {
			hit.status = 304
			w.WriteHeader(304)
			return
		}
		w.Header().Set("Last-Modified", revisitLastMod)
		page("lastmod page")
	case "/same":
		page("the same words every time")
	case "/moving":
		s.mu.Lock()
		s.n++
		n := s.n
		s.mu.Unlock()
		page(fmt.Sprintf("version %d", n))
	default:
		hit.status = 404
		http.NotFound(w, r)
	}
}

func (s *revisitSite) hits(path string) []revisitHit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []revisitHit
	for _, h := range s.log {
		if h.path == path {
			out = append(out, h)
		}
	}
	return out
}

// run --revisit-min/--revisit-max: every page is visited again and again
// until the crawl is stopped (it never ends on its own); revisits send the
// last validators and a 304 or the same body is recorded changed: false,
// a new body changed: true, a first visit without changed.
func TestRunRevisits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	site := &revisitSite{base: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: site, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	cfg := testConfig(t, []string{site.base + "/"})
	cfg.RevisitMin, cfg.RevisitMax = 200*time.Millisecond, 600*time.Millisecond
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	cfg.Archive = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Stop once every page has been revisited a few times (bounded).
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			enough := true
			for _, p := range []string{"/", "/etag", "/lastmod", "/same", "/moving"} {
				enough = enough && len(site.hits(p)) >= 3
			}
			if enough {
				break
			}
			time.Sleep(50 * time.Millisecond) // polling the server's log
		}
		cancel()
	}()
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); !errors.Is(err, app.ErrInterrupted) {
		t.Fatalf("RunAll = %v; want it stopped by its context (a continuous crawl does not end)", err)
	}
	for _, p := range []string{"/", "/etag", "/lastmod", "/same", "/moving"} {
		if n := len(site.hits(p)); n < 3 {
			t.Fatalf("%s requested %d times; want at least 3 (revisits)", p, n)
		}
	}
	etag, lastmod := site.hits("/etag"), site.hits("/lastmod")
	if etag[0].ifNoneMatch != "" || etag[1].ifNoneMatch != `"e1"` || etag[1].status != 304 {
		t.Errorf("/etag: %+v; want a plain first request, then If-None-Match and 304s", etag)
	}
	if lastmod[1].ifModifiedSince != revisitLastMod || lastmod[1].status != 304 {
		t.Errorf("/lastmod: %+v; want If-Modified-Since and 304s", lastmod)
	}

	// The archive: unchanged pages are revisit records of the right
	// profile, referring to the URL.
	profiles := map[string]int{}
	// Completed files and the one a stopped run left open.
	for _, r := range readWARC(t, cfg.Archive, "*.warc*") {
		if r.Get("WARC-Type") != "revisit" {
			continue
		}
		path := strings.TrimPrefix(r.Get("WARC-Target-URI"), site.base)
		if r.Get("WARC-Refers-To-Target-URI") != r.Get("WARC-Target-URI") {
			t.Errorf("revisit record of %s refers to %q", path, r.Get("WARC-Refers-To-Target-URI"))
		}
		profiles[path+" "+r.Get("WARC-Profile")[strings.LastIndex(r.Get("WARC-Profile"), "/")+1:]]++
	}
	t.Logf("revisit records by page and profile: %v", profiles)
	for _, want := range []string{"/etag server-not-modified", "/lastmod server-not-modified", "/same identical-payload-digest"} {
		if profiles[want] == 0 {
			t.Errorf("no revisit record %q in the archive: %v", want, profiles)
		}
	}
	for k := range profiles {
		if strings.HasPrefix(k, "/moving") {
			t.Errorf("a changing page got a revisit record: %v", profiles)
		}
	}

	// The same data dir without the revisit flags and without seeds ends
	// (it does not wait for the schedule) and says what the schedule is.
	again := cfg
	again.Seeds, again.RevisitMin, again.RevisitMax = nil, 0, 0
	again.Out, again.Archive = "", ""
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	defer acancel()
	_, err = app.RunAll(actx, again, app.RunOptions{}, testLogger(t))
	t.Logf("the same data dir, no revisit flags: %v", err)
	var fin *app.FinishedError
	switch {
	case errors.As(err, &fin):
		if fin.Scheduled == 0 || !strings.Contains(err.Error(), "--revisit-min") {
			t.Errorf("a run without the revisit flags: %v (scheduled %d); want the schedule named", err, fin.Scheduled)
		}
	case err != nil:
		t.Errorf("a run without the revisit flags on a continuous crawl's data dir: %v", err)
	}

	docs := map[string][]messages.Parsed{}
	data, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var d messages.Parsed
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("--out line %q: %v", line, err)
		}
		docs[strings.TrimPrefix(d.URL, site.base)] = append(docs[strings.TrimPrefix(d.URL, site.base)], d)
	}
	changed := func(path string) []string {
		var out []string
		for _, d := range docs[path] {
			switch {
			case d.Changed == nil:
				out = append(out, fmt.Sprintf("%d:first", d.Status))
			case *d.Changed:
				out = append(out, fmt.Sprintf("%d:changed", d.Status))
			default:
				out = append(out, fmt.Sprintf("%d:unchanged", d.Status))
			}
		}
		return out
	}
	for path, want := range map[string][]string{
		"/etag": {"200:first", "304:unchanged"}, "/lastmod": {"200:first", "304:unchanged"},
		"/same": {"200:first", "200:unchanged"}, "/moving": {"200:first", "200:changed"},
	} {
		got := changed(path)
		if len(got) < 2 || got[0] != want[0] {
			t.Errorf("%s documents %v; want %s first", path, got, want[0])
			continue
		}
		for _, g := range got[1:] {
			if g != want[1] {
				t.Errorf("%s documents %v; want %s after the first", path, got, want[1])
				break
			}
		}
	}
}
