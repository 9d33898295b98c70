// Package hostileweb serves a web of misbehaving servers beside ordinary
// pages, on loopback addresses, for tests that crawl it and for tools that
// show what a crawler makes of it.
//
// Each ordinary page is linked from the seed (a tree) and from other
// ordinary pages; every hostile case and trap is linked from an ordinary
// page. Servers that net/http cannot make misbehave (a wrong Content-Length,
// broken chunked framing, a reset mid-body, slow or huge headers) are raw
// TCP servers, one address each, so that one case cannot spoil another's
// connection. The web knows its ground truth: the ordinary pages a crawl
// must fetch (status 200), and for each hostile URL what a correct crawler
// records (Want), and for each trap the host a budget must bound.
package hostileweb

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options shape the web. The limits are the crawler's: the web uses them to
// size its cases and to tell what a crawler with those limits records.
type Options struct {
	// IP is the first loopback address a host listens on; each further
	// host takes the next address. Default 127.0.18.1.
	IP string
	// Pages is the number of ordinary pages on the two ordinary hosts
	// (the hostile hosts serve one ordinary page each besides). Default 72.
	Pages int
	// MaxBody is the crawler's body cap (--max-body), default 1 MiB.
	MaxBody int64
	// MaxRedirects is the crawler's --max-redirects, default 5.
	MaxRedirects int
	// MaxLinks is the most links the crawler keeps of one page (the
	// parser's 10,000 by default).
	MaxLinks int
	// The crawler's trap limits: --max-path-depth (default 20),
	// --max-repeated-segments (2) and --max-query-params (20).
	MaxPathDepth, MaxRepeatedSegments, MaxQueryParams int
}

func (o *Options) defaults() {
	if o.IP == "" {
		o.IP = "127.0.18.1"
	}
	if o.Pages <= 0 {
		o.Pages = 72
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = 5
	}
	if o.MaxLinks <= 0 {
		o.MaxLinks = 10000
	}
	if o.MaxPathDepth <= 0 {
		o.MaxPathDepth = 20
	}
	if o.MaxRepeatedSegments <= 0 {
		o.MaxRepeatedSegments = 2
	}
	if o.MaxQueryParams <= 0 {
		o.MaxQueryParams = 20
	}
}

// Error kinds a fetch may end with (the fetcher's KindTimeout etc., as the
// page record's error_kind carries them).
const (
	KindTimeout  = "timeout"
	KindSlow     = "slow" // under --min-transfer-rate
	KindReset    = "reset"
	KindProtocol = "protocol"
	KindRobots   = "robots"
	KindDNS      = "dns"
)

// Want is what a correct crawler records for one URL.
type Want struct {
	// NotFetched: the URL lies beyond a limit (a redirect chain's end); it
	// must never be requested and has no record.
	NotFetched bool
	// Status is the response status; 0 when there was no response.
	Status int
	// ErrKinds are the acceptable error kinds; none: the fetch succeeds.
	ErrKinds []string
	// ErrContains is text the record's error must hold.
	ErrContains string
	// Truncated: the body was cut at the crawler's --max-body.
	Truncated bool
	// ParsedTruncated: the parser cut the page's links (too many).
	ParsedTruncated bool
	// Title and Charset, when set, are the parsed title and encoding.
	Title, Charset string
	// Outlink, when set, is a link the record's outlinks must include.
	Outlink string
}

// Case is one hostile URL and what a crawler records for it.
type Case struct {
	Class string // e.g. "slow headers"
	URL   string
	Want  Want
}

// Trap is a host serving endless dynamic URLs: every URL of the host
// (Base) belongs to it. A crawl must leave it: after exactly Fetches URLs
// when a trap limit (path depth, repeated segments, query parameters) ends
// it, or within a per-host budget when Fetches is 0.
type Trap struct {
	Class    string
	Entrance string // the URL ordinary pages link to
	Base     string // scheme://host:port of the trap's host
	Fetches  int    // URLs a crawler with the Options' limits fetches; 0: unbounded but for a budget
}

// Web is a running hostile web.
type Web struct {
	// Seed is the first ordinary page; every other page is reachable from it.
	Seed string
	// Ordinary are the ordinary pages, Seed first: a crawl must fetch each
	// with status 200.
	Ordinary []string
	// Cases are the hostile URLs with what a crawler records for them.
	Cases []Case
	// Traps are the endless hosts.
	Traps []Trap
	// DNS is a UDP DNS server (ip:port) that answers every name with
	// NXDOMAIN, for a crawler's resolver: Unresolvable is linked.
	DNS string
	// Unresolvable is a host name that does not resolve.
	Unresolvable string
	// Hosts maps each host's name to its base URL.
	Hosts map[string]string

	o        Options
	next     netip.Addr
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	closers  []func()
	conns    map[net.Conn]bool
	requests map[string]int
	closed   bool
}

// Start serves a hostile web. Close stops it.
func Start(o Options) (w *Web, err error) {
	o.defaults()
	first, err := netip.ParseAddr(o.IP)
	if err != nil || !first.Is4() || !first.IsLoopback() {
		return nil, fmt.Errorf("hostileweb: IP %q: want an IPv4 loopback address", o.IP)
	}
	w = &Web{o: o, next: first, stop: make(chan struct{}), conns: map[net.Conn]bool{},
		requests: map[string]int{}, Hosts: map[string]string{}, Unresolvable: "nowhere.invalid"}
	defer func() {
		if err != nil {
			w.Close()
			w = nil
		}
	}()
	if err := w.serveDNS(first); err != nil {
		return nil, err
	}
	return w, w.build()
}

// Close stops every server and waits for their goroutines.
func (w *Web) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.stop)
	closers := w.closers
	for c := range w.conns {
		c.Close()
	}
	w.mu.Unlock()
	for _, c := range closers {
		c()
	}
	w.wg.Wait()
}

// Requests returns how often each absolute URL was requested, robots.txt
// included.
func (w *Web) Requests() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.requests))
	for u, n := range w.requests {
		out[u] = n
	}
	return out
}

// OnHost returns the URLs requested of the host with base URL base, other
// than robots.txt.
func (w *Web) OnHost(base string) []string {
	var out []string
	for u := range w.Requests() {
		if strings.HasPrefix(u, base+"/") && u != base+"/robots.txt" {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

func (w *Web) count(base string, r *http.Request) {
	w.mu.Lock()
	w.requests[base+r.URL.RequestURI()]++
	w.mu.Unlock()
}

func (w *Web) addCloser(f func()) {
	w.mu.Lock()
	w.closers = append(w.closers, f)
	w.mu.Unlock()
}

// listen takes the next loopback address.
func (w *Web) listen(name string) (net.Listener, string, error) {
	ip := w.next
	w.next = ip.Next()
	ln, err := net.Listen("tcp", ip.String()+":0")
	if err != nil {
		return nil, "", fmt.Errorf("hostileweb: host %s on %s: %w", name, ip, err)
	}
	base := "http://" + ln.Addr().String()
	w.Hosts[name] = base
	return ln, base, nil
}

// httpHost serves handler on a new address; every request is counted.
func (w *Web) httpHost(name string, handler func(base string) http.HandlerFunc) (string, error) {
	ln, base, err := w.listen(name)
	if err != nil {
		return "", err
	}
	h := handler(base)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.count(base, r)
			h(rw, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // the crawler hanging up on a bomb is the point
	}
	w.wg.Go(func() { _ = srv.Serve(ln) })
	w.addCloser(func() { srv.Close() })
	return base, nil
}

// rawHost serves one request per connection: with robots, robots.txt is a
// 404; with an okPage, /ok.html is that ordinary page, both well formed. Any
// other request goes to handle, which writes what it likes. The connection
// is closed after.
func (w *Web) rawHost(name string, okPage string, robots bool, handle func(conn net.Conn, r *http.Request)) (string, error) {
	ln, base, err := w.listen(name)
	if err != nil {
		return "", err
	}
	w.addCloser(func() { ln.Close() })
	w.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			w.mu.Lock()
			if w.closed {
				w.mu.Unlock()
				conn.Close()
				return
			}
			w.conns[conn] = true
			w.mu.Unlock()
			w.wg.Go(func() {
				defer func() {
					conn.Close()
					w.mu.Lock()
					delete(w.conns, conn)
					w.mu.Unlock()
				}()
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				r, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				conn.SetReadDeadline(time.Time{})
				w.count(base, r)
				switch {
				case robots && r.URL.Path == "/robots.txt":
					io.WriteString(conn, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found")
				case okPage != "" && r.URL.Path == "/ok.html":
					fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(okPage), okPage)
				default:
					handle(conn, r)
				}
			})
		}
	})
	return base, nil
}

// sleep waits d or until the web closes; false when it closed.
func (w *Web) sleep(d time.Duration) bool {
	select {
	case <-w.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// trickle writes s n bytes every interval, round and round, until a write
// fails or the web closes.
func (w *Web) trickle(conn net.Conn, s string, n int, interval time.Duration) {
	s = strings.Repeat(s, n)
	for i := 0; ; i = (i + n) % len(s) {
		if _, err := io.WriteString(conn, s[i:i+n]); err != nil || !w.sleep(interval) {
			return
		}
	}
}

// html renders an ordinary page: a title, some text and links.
func html(title string, links []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n<h1>%s</h1>\n", title, title)
	b.WriteString("<p>An ordinary page of the hostile web: nothing here misbehaves.</p>\n<ul>\n")
	for _, l := range links {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", l, l)
	}
	b.WriteString("</ul></body></html>\n")
	return b.String()
}
