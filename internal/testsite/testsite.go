// Package testsite serves a small web of several hosts on loopback addresses
// for end-to-end tests and benchmarks, counts every request, checks that no
// host ever sees two requests at once, and computes what a crawl should reach.
package testsite

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Page is what a path of a host serves.
type Page struct {
	Status   int      // default 200
	Links    []string // absolute URLs, rendered as <a href>; same-host links root-relative
	Redirect string   // absolute URL; Status defaults to 301
	Body     string   // raw body instead of generated HTML
	Type     string   // Content-Type, default text/html; charset=utf-8
	Size     int      // pad the body to this many bytes
	Delay    time.Duration
}

// Host is one web server of the site.
type Host struct {
	site  *Site
	Name  string
	Base  string // scheme://ip:port
	mu    sync.Mutex
	pages map[string]Page
	busy  int            // requests being served now
	spans [][2]time.Time // start and end of each request, guarded by mu
	delay time.Duration  // added to every response of this host, guarded by mu
}

// Site is a set of hosts with shared request accounting.
type Site struct {
	mu       sync.Mutex
	hosts    []*Host
	requests map[string]int // absolute URL -> times requested
	overlap  []string       // hosts that saw two requests at once
	Latency  time.Duration  // added to every response
}

// New returns an empty site; hosts are closed when t ends.
func New() *Site { return &Site{requests: map[string]int{}} }

// AddHost starts a server on ip (a 127.x.y.z address) with a free port.
func (s *Site) AddHost(tb testing.TB, name, ip string) *Host {
	tb.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		tb.Fatalf("testsite: listen on %s: %v", ip, err)
	}
	h := &Host{site: s, Name: name, Base: "http://" + ln.Addr().String(), pages: map[string]Page{}}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	s.mu.Lock()
	s.hosts = append(s.hosts, h)
	s.mu.Unlock()
	return h
}

// URL is the absolute URL of path on h.
func (h *Host) URL(path string) string { return h.Base + path }

// Set defines what path serves.
func (h *Host) Set(path string, p Page) {
	h.mu.Lock()
	h.pages[path] = p
	h.mu.Unlock()
}

func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.site
	h.mu.Lock()
	h.busy++
	if h.busy > 1 {
		s.mu.Lock()
		s.overlap = append(s.overlap, h.Name)
		s.mu.Unlock()
	}
	p, ok := h.pages[r.URL.RequestURI()]
	hostDelay := h.delay
	h.mu.Unlock()
	start := time.Now()
	defer func() {
		h.mu.Lock()
		h.busy--
		h.spans = append(h.spans, [2]time.Time{start, time.Now()})
		h.mu.Unlock()
	}()

	s.mu.Lock()
	s.requests[h.Base+r.URL.RequestURI()]++
	lat := s.Latency
	s.mu.Unlock()
	time.Sleep(lat + hostDelay + p.Delay)

	switch {
	case !ok:
		http.NotFound(w, r)
	case p.Redirect != "":
		http.Redirect(w, r, p.Redirect, max(p.Status, http.StatusMovedPermanently))
	default:
		w.Header().Set("Content-Type", cmp(p.Type, "text/html; charset=utf-8"))
		w.WriteHeader(max(p.Status, http.StatusOK))
		body := p.Body
		if body == "" {
			body = h.render(r.URL.Path, p.Links)
		}
		if pad := p.Size - len(body); pad > 0 {
			body += strings.Repeat(" ", pad)
		}
		_, _ = w.Write([]byte(body))
	}
}

// render writes links the way real pages do: same-host links relative to the
// root, others absolute, plus noise a crawler must ignore.
func (h *Host) render(path string, links []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s%s</title></head><body>\n", h.Name, path)
	b.WriteString(`<a href="#top">top</a> <a href="mailto:webmaster@example.org">mail</a> <a href="javascript:void(0)">js</a>` + "\n")
	for _, l := range links {
		href := l
		if strings.HasPrefix(l, h.Base+"/") {
			href = strings.TrimPrefix(l, h.Base)
		}
		fmt.Fprintf(&b, "<p><a href=\"%s\">link</a></p>\n", href)
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// SetDelay makes every response of h take d longer (a slow server).
func (h *Host) SetDelay(d time.Duration) {
	h.mu.Lock()
	h.delay = d
	h.mu.Unlock()
}

// Spans returns the start and end of every request h served, by start.
func (h *Host) Spans() [][2]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	spans := append([][2]time.Time(nil), h.spans...)
	sort.Slice(spans, func(i, j int) bool { return spans[i][0].Before(spans[j][0]) })
	return spans
}

// Requests returns how often each URL was requested.
func (s *Site) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		out[k] = v
	}
	return out
}

// Requests returns how often each URL of h was requested.
func (h *Host) Requests() map[string]int {
	out := map[string]int{}
	for u, n := range h.site.Requests() {
		if strings.HasPrefix(u, h.Base+"/") {
			out[u] = n
		}
	}
	return out
}

// MinGap is the shortest time between the end of one request to h and the
// start of the next (-1 with fewer than two requests).
func (h *Host) MinGap() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	spans := append([][2]time.Time(nil), h.spans...)
	sort.Slice(spans, func(i, j int) bool { return spans[i][0].Before(spans[j][0]) })
	gap := time.Duration(-1)
	for i := 1; i < len(spans); i++ {
		if g := spans[i][0].Sub(spans[i-1][1]); gap < 0 || g < gap {
			gap = g
		}
	}
	return gap
}

// Hosts returns the site's hosts in the order they were added.
func (s *Site) Hosts() []*Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Host(nil), s.hosts...)
}

// Overlaps lists hosts that were sent a request while serving another.
func (s *Site) Overlaps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.overlap...)
}

// Reachable is the set of URLs a crawl from seeds must request: breadth-first
// over the site's own link lists (redirects are edges), staying on URLs for
// which inScope holds, up to maxDepth link hops (-1: any).
func (s *Site) Reachable(seeds []string, inScope func(u *url.URL) bool, maxDepth int) []string {
	pageOf := func(raw string) (Page, bool, bool) {
		u, err := url.Parse(raw)
		if err != nil {
			return Page{}, false, false
		}
		for _, h := range s.hosts {
			if h.Base == u.Scheme+"://"+u.Host {
				h.mu.Lock()
				p, ok := h.pages[u.RequestURI()]
				h.mu.Unlock()
				return p, ok, true
			}
		}
		return Page{}, false, false
	}
	depth := map[string]int{}
	var queue []string
	for _, sd := range seeds {
		if _, seen := depth[sd]; !seen {
			depth[sd] = 0
			queue = append(queue, sd)
		}
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p, ok, _ := pageOf(cur)
		if !ok {
			continue
		}
		next, d := p.Links, depth[cur]+1
		if p.Redirect != "" {
			next, d = []string{p.Redirect}, depth[cur]
		} else if max(p.Status, 200) >= 300 || (p.Type != "" && !strings.Contains(p.Type, "html")) {
			next = nil
		}
		if maxDepth >= 0 && d > maxDepth {
			continue
		}
		for _, l := range next {
			u, err := url.Parse(l)
			if err != nil || !inScope(u) {
				continue
			}
			if _, seen := depth[l]; !seen {
				depth[l] = d
				queue = append(queue, l)
			}
		}
	}
	out := make([]string, 0, len(depth))
	for u := range depth {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// Generate fills hosts with n pages each, linked at random (seeded, so the
// web is the same every run): every page links to k pages of its own host and
// now and then to the front page of another host. Page 0 is "/".
func Generate(hosts []*Host, n, k int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	path := func(i int) string {
		if i == 0 {
			return "/"
		}
		return fmt.Sprintf("/p/%d", i)
	}
	for hi, h := range hosts {
		for i := 0; i < n; i++ {
			var links []string
			// A chain guarantees every page is reachable; the rest is noise
			// with plenty of duplicates and cycles.
			if i+1 < n {
				links = append(links, h.URL(path(i+1)))
			}
			for j := 0; j < k; j++ {
				links = append(links, h.URL(path(r.IntN(n))))
			}
			if r.IntN(4) == 0 {
				links = append(links, hosts[(hi+1+r.IntN(len(hosts)))%len(hosts)].URL("/"))
			}
			h.Set(path(i), Page{Links: links})
		}
	}
}
