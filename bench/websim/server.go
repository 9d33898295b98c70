package websim

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one request as the server saw it.
type Request struct {
	Host int
	// Path is the request's target normalized as a crawler's canonical
	// URL is (Target: dot segments resolved, percent-escapes decoded):
	// two requests of one Path asked for the same URL. Raw is the target
	// as sent.
	Path, Raw  string
	Start, End time.Time
	// Sent is when the server began writing the response's last bytes
	// (its body, or End for a response without one): the client cannot
	// have the whole response before it. End is when the handler returned,
	// which a descheduled handler goroutine can record after the client
	// already has the response; the true end lies between the two.
	Sent   time.Time
	Status int
}

// Server serves a Web: one listener per host address. It logs every request
// and tracks, per host, how many requests are served at once.
type Server struct {
	web      *Web
	hosts    []*hostState
	handlers []http.HandlerFunc
	srvs     []*http.Server
	wg       sync.WaitGroup
	dns      net.PacketConn // the discovery mode's DNS server
	proxy    string         // the discovery mode's HTTP proxy, host:port
}

type hostState struct {
	busy    atomic.Int32
	maxBusy atomic.Int32
	mu      sync.Mutex
	log     []Request
}

// Serve starts listening on every host's address.
func Serve(w *Web) (*Server, error) {
	s := &Server{web: w, hosts: make([]*hostState, w.cfg.Hosts)}
	for h := range s.hosts {
		s.hosts[h] = &hostState{}
		s.handlers = append(s.handlers, s.handler(h))
		if w.failing[h] == Down {
			continue // its name resolves; nothing listens
		}
		ln, err := net.Listen("tcp", w.Addr(h))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("websim: %w (on Linux all of 127.0.0.0/8 is loopback; elsewhere add the addresses)", err)
		}
		srv := &http.Server{Handler: s.handlers[h], ReadHeaderTimeout: 10 * time.Second}
		s.srvs = append(s.srvs, srv)
		s.wg.Go(func() { _ = srv.Serve(ln) })
	}
	if w.cfg.Discovery {
		if err := s.serveDNS(); err != nil {
			s.Close()
			return nil, err
		}
		if err := s.serveProxy(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// DNSAddr is the address (127.0.0.1:port, UDP) of the discovery mode's DNS
// server, which answers the A records of the web's host names; "" for a
// seeded web, whose hosts are addresses.
func (s *Server) DNSAddr() string {
	if s.dns == nil {
		return ""
	}
	return s.dns.LocalAddr().String()
}

// ProxyAddr is the address (127.0.0.1:port) of the discovery mode's HTTP
// proxy, for clients that resolve names only through the system (GNU
// Wget): it hands each request to its host's handler, so the audit sees it
// as if sent to the host directly. "" for a seeded web.
func (s *Server) ProxyAddr() string { return s.proxy }

func (s *Server) serveProxy() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("websim proxy: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		host := req.URL.Host
		if host == "" {
			host = req.Host
		}
		h := s.web.HostOf(host)
		if h < 0 {
			http.Error(rw, "websim proxy: not a host of this web: "+host, http.StatusBadGateway)
			return
		}
		s.handlers[h](rw, req)
	})}
	s.srvs = append(s.srvs, srv)
	s.proxy = ln.Addr().String()
	s.wg.Go(func() { _ = srv.Serve(ln) })
	return nil
}

// Close stops every listener and waits for them.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range s.srvs {
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			_ = srv.Close()
		}
	}
	if s.dns != nil {
		_ = s.dns.Close()
	}
	s.wg.Wait()
}

// Reset forgets the request log and the concurrency peaks, for the next run.
func (s *Server) Reset() {
	for _, hs := range s.hosts {
		hs.mu.Lock()
		hs.log = nil
		hs.mu.Unlock()
		hs.maxBusy.Store(0)
	}
}

// Log returns a copy of every request since the last Reset, host by host.
func (s *Server) Log() [][]Request {
	out := make([][]Request, len(s.hosts))
	for h, hs := range s.hosts {
		hs.mu.Lock()
		out[h] = append([]Request(nil), hs.log...)
		hs.mu.Unlock()
	}
	return out
}

// MaxConcurrent is the largest number of requests host h served at once.
func (s *Server) MaxConcurrent(h int) int { return int(s.hosts[h].maxBusy.Load()) }

func (s *Server) handler(h int) http.HandlerFunc {
	hs := s.hosts[h]
	return func(rw http.ResponseWriter, req *http.Request) {
		start := time.Now()
		n := hs.busy.Add(1)
		for m := hs.maxBusy.Load(); n > m && !hs.maxBusy.CompareAndSwap(m, n); m = hs.maxBusy.Load() {
		}
		sw := &sentWriter{ResponseWriter: rw}
		status := s.serve(h, sw, req)
		hs.busy.Add(-1)
		end := time.Now()
		sent := sw.sent
		if sent.IsZero() {
			sent = end // headers only: they leave when the handler returns
		}
		hs.mu.Lock()
		hs.log = append(hs.log, Request{Host: h, Path: Target(req.URL), Raw: req.URL.RequestURI(), Start: start, End: end, Sent: sent, Status: status})
		hs.mu.Unlock()
	}
}

func (s *Server) serve(h int, rw http.ResponseWriter, req *http.Request) int {
	if s.web.failing[h] == Hang {
		<-req.Context().Done() // the client gave up, or the server closes
		return 0
	}
	if d := s.web.latencies[h]; d > 0 {
		time.Sleep(d)
	}
	path := Target(req.URL)
	res := s.web.Resolve(h, path)
	switch {
	case res.Kind == KindRobots:
		rw.Header().Set("Content-Type", "text/plain")
		_, _ = rw.Write([]byte(s.web.Robots()))
	case res.Target != "":
		rw.Header().Set("Location", res.Target)
		rw.WriteHeader(res.Status)
	case res.Status == 200 && len(s.web.cfg.Dirs) > 0:
		body, ct := s.web.fileBody(h, path)
		rw.Header().Set("Content-Type", ct)
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = rw.Write(body)
	case res.Status == 200:
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		body := s.web.Page(h, path)
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = rw.Write(body)
	default:
		http.NotFound(rw, req)
	}
	return res.Status
}

// Target is the request target of u normalized as a crawler's canonical URL
// is: the path with its percent-escapes decoded and its dot segments
// resolved, then the query as sent ("?" alone included: an empty query
// makes another URL, see discovery.go).
func Target(u *url.URL) string {
	p := u.Path
	if p == "" {
		p = "/"
	}
	if strings.Contains(p, "/.") || strings.Contains(p, "//") {
		c := path.Clean(p)
		if strings.HasSuffix(p, "/") && c != "/" {
			c += "/"
		}
		p = c
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + u.RawQuery
	}
	return p
}

// filler is prose that pads pages to their size; slices of it are cheap.
var filler = strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ", 2200)

var topicWords = []string{"astronomy", "baking", "cycling", "databases", "economics", "forestry", "genetics", "harbours", "immunology", "jazz"}

// Page renders the HTML of page (h, path): a title, a topic line, and its
// links as anchors spread between paragraphs of filler up to BodySize.
func (w *Web) Page(h int, path string) []byte {
	if w.cfg.Discovery {
		return w.discoveryPage(h, path)
	}
	links := w.Links(h, path)
	size := w.BodySize(h, path)
	b := make([]byte, 0, size+256)
	b = fmt.Appendf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>host %d %s</title></head>\n<body>\n", h, html.EscapeString(path))
	if t := w.Topic(h, path); t >= 0 {
		word := topicWords[t%len(topicWords)]
		b = fmt.Appendf(b, "<h1>About %s (topic %d)</h1>\n<p>%s %s %s.</p>\n", word, t, word, word, word)
	}
	// Paragraph budget shared between the gaps after each link.
	linkBytes := 0
	for _, l := range links {
		linkBytes += 2*len(l.Href) + 24
	}
	gap := max(0, (size-len(b)-linkBytes-40)/(len(links)+1))
	off := int(hashString(path)) & 0xffff
	para := func() {
		if gap > 0 {
			o := off % (len(filler) - gap)
			b = append(b, "<p>"...)
			b = append(b, filler[o:o+gap]...)
			b = append(b, "</p>\n"...)
			off += 7919
		}
	}
	para()
	for _, l := range links {
		b = fmt.Appendf(b, "<a href=\"%s\">%s</a>\n", l.Href, l.Href)
		para()
	}
	return append(b, "</body></html>\n"...)
}

// sentWriter notes when the last body write began.
type sentWriter struct {
	http.ResponseWriter
	sent time.Time
}

func (w *sentWriter) Write(b []byte) (int, error) {
	w.sent = time.Now()
	return w.ResponseWriter.Write(b)
}
