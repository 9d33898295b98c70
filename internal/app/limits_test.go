package app_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
)

// trapServer is a spider trap: an endless calendar (each day links to the
// next and the previous one) and ever-longer URLs (each page links to its
// own path plus a segment). It records every path it was asked for.
type trapServer struct {
	base string
	mu   sync.Mutex
	seen []string
}

func startTrap(t *testing.T, ip string) *trapServer {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &trapServer{base: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: ts, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ts
}

func (ts *trapServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.RequestURI()
	ts.mu.Lock()
	ts.seen = append(ts.seen, p)
	ts.mu.Unlock()
	var links []string
	switch {
	case p == "/":
		links = []string{"/cal/2026-01-01", "/grow/x/"}
	case strings.HasPrefix(p, "/cal/"):
		day, err := time.Parse("2006-01-02", strings.TrimPrefix(p, "/cal/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		links = []string{"/cal/" + day.AddDate(0, 0, 1).Format("2006-01-02"), "/cal/" + day.AddDate(0, 0, -1).Format("2006-01-02")}
	case strings.HasPrefix(p, "/grow/"):
		links = []string{p + "segment/"}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<html><body>")
	for _, l := range links {
		fmt.Fprintf(w, `<a href="%s">next</a>`, l)
	}
	fmt.Fprint(w, "</body></html>")
}

func (ts *trapServer) requests(prefix string) []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []string
	for _, p := range ts.seen {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// A crawl that meets spider traps leaves them: the endless calendar after
// the per-host budget, the ever-longer URLs at the URL length limit; the
// ordinary host beside them is crawled completely and the crawl ends.
func TestSpiderTrapsEndAtTheLimits(t *testing.T) {
	calendar := startTrap(t, "127.0.2.20")
	grower := startTrap(t, "127.0.2.21")
	site := testsite.New()
	ok := site.AddHost(t, "ok", "127.0.2.22")
	testsite.Generate([]*testsite.Host{ok}, 15, 3, 5)

	seeds := []string{calendar.base + "/cal/2026-01-01", grower.base + "/grow/x/", ok.URL("/")}
	cfg := testConfig(t, seeds)
	cfg.PolitenessDelay = time.Millisecond
	const budget, maxLen = 40, 120
	cfg.MaxPagesPerHost, cfg.MaxURLLength = budget, maxLen
	// The URL length alone ends the ever-longer URLs here; with the
	// default --max-repeated-segments their third "segment" would end them
	// first (TestTrapLimitsInTheSummary).
	cfg.MaxRepeatedSegments = 0

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	if got := calendar.requests("/cal/"); len(got) != budget {
		t.Errorf("calendar: %d pages fetched, want the host budget of %d", len(got), budget)
	}
	grown := grower.requests("/grow/")
	longest := 0
	for _, p := range grown {
		if n := len(grower.base + p); n > maxLen {
			t.Errorf("fetched a URL of %d characters, over the limit of %d: %s", n, maxLen, p)
		} else {
			longest = max(longest, n)
		}
	}
	if longest < maxLen-len("segment/") {
		t.Errorf("longest URL fetched has %d characters; the chain should run up to the limit of %d", longest, maxLen)
	}
	want := site.Reachable([]string{ok.URL("/")}, func(*urlURL) bool { return true }, -1)
	assertFetchedOnce(t, site, want)
	t.Logf("calendar stopped after %d pages, ever-longer URLs after %d (longest %d characters)", budget, len(grown), longest)
}
