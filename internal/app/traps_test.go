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
	"github.com/trawlerhq/trawler/pkg/traps"
)

// pathTraps is a host of three traps the link limits end (issue 18): paths
// that grow a new segment at every page (/deep/d2/d3/...), paths that grow
// the same segment (/grow/x/segment/segment/...), and a query that grows a
// parameter (/q?p0=1&p1=1...). It records the URLs it was asked for.
type pathTraps struct {
	base string
	mu   sync.Mutex
	seen []string
}

func (pt *pathTraps) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.RequestURI()
	var link string
	switch {
	case p == "/":
		link = `<a href="/deep/">d</a><a href="/grow/x/">g</a><a href="/q?p0=1">q</a>`
	case strings.HasPrefix(p, "/deep/"):
		link = fmt.Sprintf(`<a href="%sd%d/">next</a>`, p, strings.Count(p, "/"))
	case strings.HasPrefix(p, "/grow/"):
		link = `<a href="` + p + `segment/">next</a>`
	case strings.HasPrefix(p, "/q?"):
		link = fmt.Sprintf(`<a href="%s&amp;p%d=1">next</a>`, p, strings.Count(p, "&")+1)
	default:
		http.NotFound(w, r)
		return
	}
	pt.mu.Lock()
	pt.seen = append(pt.seen, p)
	pt.mu.Unlock()
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<html><body>"+link+"</body></html>")
}

// With the default limits a crawl leaves each trap at its limit: 20 path
// segments, a segment twice, 20 query parameters; every exclusion is
// counted by its reason, and the run's summary row says so.
func TestTrapLimitsInTheSummary(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.2.30:0")
	if err != nil {
		t.Fatal(err)
	}
	pt := &pathTraps{base: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: pt, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	cfg := testConfig(t, []string{pt.base + "/"})
	cfg.PolitenessDelay = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}

	pt.mu.Lock()
	defer pt.mu.Unlock()
	var deep, grow, query, deepest, mostParams int
	for _, p := range pt.seen {
		path, q := traps.Split(p)
		switch {
		case strings.HasPrefix(p, "/deep/"):
			deep++
			deepest = max(deepest, traps.Depth(path))
		case strings.HasPrefix(p, "/grow/"):
			grow++
		case strings.HasPrefix(p, "/q?"):
			query++
			mostParams = max(mostParams, traps.CountParams(q))
		}
		if r := (traps.Limits{MaxURLLength: 256, MaxPathDepth: 20, MaxRepeatedSegments: 2, MaxQueryParams: 20}).Check(pt.base + p); r != traps.Allowed {
			t.Errorf("fetched %s, over the %s limit", p, r)
		}
	}
	// /deep/ (1 segment) to 20 segments; /grow/x/, one and two "segment";
	// 1 to 20 parameters.
	if deep != 20 || deepest != 20 || grow != 3 || query != 20 || mostParams != 20 {
		t.Errorf("fetched %d deep pages (deepest %d segments), %d growing, %d query pages (most %d parameters): %q",
			deep, deepest, grow, query, mostParams, pt.seen)
	}
	if got, want := app.ExcludedLinks(sum.Counters), "3 links: 1 path depth, 1 repeated segment, 1 query params"; got != want {
		t.Errorf("summary row %q, want %q", got, want)
	}
}
