// Command refcrawl is a reference continuous crawler for the freshness
// benchmark (bench/cmd/freshness): the revisit rule of pkg/revisit applied
// as the issue describes it, in one small loop per host, with none of
// Trawler's machinery. It takes the few flags of `trawler run` that the
// benchmark passes, so the benchmark runs against it with
// -trawler-bin: what it scores is what the rule scores when nothing else
// intervenes, the yardstick for Trawler's own figures (and it lets the
// harness be tested before Trawler crawls continuously).
//
// Per host, one request at a time, the next no sooner than --politeness-delay
// after the last response ended; among the host's known pages, the one due
// soonest (a page just discovered is due at once). A page's first interval
// is revisit.Schedule.Initial (its Last-Modified as the hint), then
// Schedule.Next after every visit: unchanged when answered 304 or when the
// body's SHA-1 is the previous one's (--last-modified=false keeps
// Last-Modified from the rule). Requests carry If-None-Match and
// If-Modified-Since from the previous response. Links are the href
// attributes of a page, kept when on the page's own host. It runs until
// SIGINT or SIGTERM.
//
//	refcrawl run --seeds-file seeds.txt --politeness-delay 1s --revisit-min 6s --revisit-max 6m40s
package main

import (
	"container/heap"
	"context"
	"crypto/sha1"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trawlerhq/trawler/pkg/revisit"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprintln(stderr, "usage: refcrawl run --seeds-file FILE --politeness-delay D --revisit-min D --revisit-max D")
		return 2
	}
	fs := flag.NewFlagSet("refcrawl run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.String("seeds-file", "", "file of seed URLs, one per line")
	delay := fs.Duration("politeness-delay", time.Second, "least time from a response to the next request to its host")
	rmin := fs.Duration("revisit-min", 0, "shortest revisit interval")
	rmax := fs.Duration("revisit-max", 0, "longest revisit interval")
	conditional := fs.Bool("conditional", true, "send If-None-Match and If-Modified-Since")
	lastModified := fs.Bool("last-modified", true, "let Last-Modified seed the first interval and sync the next ones (revisit's SyncDelta); false: the rule sees only whether the page changed")
	// Flags of `trawler run` the benchmark passes, without effect here.
	fs.String("data-dir", "", "ignored")
	fs.Bool("progress", false, "ignored")
	fs.Bool("allow-private", false, "ignored")
	fs.Float64("politeness-factor", 0, "ignored: the delay alone paces a host")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	s, err := revisit.NewSchedule(*rmin, *rmax)
	if err != nil {
		fmt.Fprintln(stderr, "refcrawl:", err)
		return 2
	}
	b, err := os.ReadFile(*seeds)
	if err != nil {
		fmt.Fprintln(stderr, "refcrawl:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var wg sync.WaitGroup
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		u, err := url.Parse(l)
		if err != nil || u.Host == "" {
			fmt.Fprintf(stderr, "refcrawl: seed %q: not an absolute URL\n", l)
			return 2
		}
		h := &host{client: client, s: s, delay: *delay, conditional: *conditional, lastModified: *lastModified, log: stderr, known: map[string]*page{}}
		h.add(u, time.Now())
		wg.Go(func() { h.crawl(ctx) })
	}
	wg.Wait()
	return 0
}

// page is what the crawler keeps of a URL.
type page struct {
	url            string
	visited        bool
	etag, modified string
	digest         [sha1.Size]byte
	interval       time.Duration
	due            time.Time
	idx            int
}

// host crawls the pages of one host.
type host struct {
	client       *http.Client
	s            revisit.Schedule
	delay        time.Duration
	conditional  bool
	lastModified bool
	log          io.Writer
	known        map[string]*page
	queue        dueQueue
}

func (h *host) add(u *url.URL, due time.Time) {
	u.Fragment = ""
	if _, ok := h.known[u.String()]; ok {
		return
	}
	p := &page{url: u.String(), due: due}
	h.known[p.url] = p
	heap.Push(&h.queue, p)
}

func (h *host) crawl(ctx context.Context) {
	var ready time.Time // politeness: no request before
	for {
		p := h.queue[0]
		at := p.due
		if at.Before(ready) {
			at = ready
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		h.visit(ctx, p)
		ready = time.Now().Add(h.delay)
		heap.Fix(&h.queue, p.idx)
	}
}

var hrefRE = regexp.MustCompile(`(?i)href\s*=\s*"([^"]*)"`)

// visit fetches p and schedules its next visit; a failed fetch is tried
// again after the minimum interval.
func (h *host) visit(ctx context.Context, p *page) {
	now := time.Now()
	req, err := http.NewRequestWithContext(ctx, "GET", p.url, nil)
	if err != nil {
		p.due = now.Add(h.s.Max)
		return
	}
	if h.conditional && p.visited {
		if p.etag != "" {
			req.Header.Set("If-None-Match", p.etag)
		}
		if p.modified != "" {
			req.Header.Set("If-Modified-Since", p.modified)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(h.log, "refcrawl: %s: %v\n", p.url, err)
		}
		p.due = now.Add(h.s.Min)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || (resp.StatusCode != 200 && resp.StatusCode != 304) {
		p.due = now.Add(h.s.Min)
		return
	}
	changed := false
	if resp.StatusCode == 200 {
		d := sha1.Sum(body)
		changed = d != p.digest
		p.digest = d
		p.etag, p.modified = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		base, _ := url.Parse(p.url)
		for _, m := range hrefRE.FindAllSubmatch(body, -1) {
			if l, err := base.Parse(string(m[1])); err == nil && l.Host == base.Host && (l.Scheme == "http" || l.Scheme == "https") {
				h.add(l, now)
			}
		}
	}
	var mod time.Time
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil && h.lastModified {
		mod = t
	}
	if !p.visited {
		p.visited = true
		p.interval = h.s.Initial(revisit.Hint{LastModified: mod}, now)
		p.due = now.Add(p.interval)
		return
	}
	p.interval, p.due = h.s.Next(p.interval, revisit.Visit{Fetched: now, Changed: changed, Modified: mod})
}

// dueQueue orders pages by when they are due.
type dueQueue []*page

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i]; q[i].idx = i; q[j].idx = j }
func (q *dueQueue) Push(x any)        { p := x.(*page); p.idx = len(*q); *q = append(*q, p) }
func (q *dueQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}
