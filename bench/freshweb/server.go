package freshweb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one request as the server saw it.
type Request struct {
	Host int
	// Page is the page's index within its host and ID its id
	// (host*Pages + index); both -1 for anything but a page (robots.txt,
	// a 404).
	Page, ID int
	Method   string
	Path     string
	// Start is when the request came in, the instant whose version was
	// served; End when the response had been written.
	Start, End time.Time
	Status     int
	// Version is the page's version served (200) or confirmed current
	// (304); -1 for anything but a page.
	Version int
	// Size is the byte length of that version's whole body, what a 200
	// carries; Body is the body bytes sent (0 for a 304).
	Size, Body int64
	// Wire is every byte written on the connection for the response:
	// status line, headers and body (0 when not served over a connection,
	// as in tests that call the handler directly).
	Wire int64
	// Cond is the conditional headers the request carried: "", "etag"
	// (If-None-Match), "date" (If-Modified-Since) or "etag+date".
	Cond string
}

// Server serves a Web: one listener per host. It logs every request.
type Server struct {
	web   *Web
	addrs []string
	srvs  []*http.Server
	wg    sync.WaitGroup

	mu  sync.Mutex
	log []Request
}

// NewServer returns a server of w that listens nowhere: Handler serves it
// (tests), Serve listens.
func NewServer(w *Web) *Server { return &Server{web: w} }

// Serve starts listening on every host's address, 127.Block.x.y:Port.
func Serve(w *Web) (*Server, error) {
	s := NewServer(w)
	for h := range w.cfg.Hosts {
		ln, err := net.Listen("tcp", net.JoinHostPort(w.IP(h), strconv.Itoa(w.cfg.Port)))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("freshweb: %w (on Linux all of 127.0.0.0/8 is loopback; elsewhere add the addresses)", err)
		}
		s.addrs = append(s.addrs, ln.Addr().String())
		srv := &http.Server{Handler: s.Handler(h), ReadHeaderTimeout: 10 * time.Second,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				if cc, ok := c.(*countConn); ok {
					ctx = context.WithValue(ctx, connKey{}, cc)
				}
				return ctx
			}}
		s.srvs = append(s.srvs, srv)
		s.wg.Go(func() { _ = srv.Serve(countListener{ln}) })
	}
	return s, nil
}

// Web is the web served.
func (s *Server) Web() *Web { return s.web }

// Addr is host h's address, ip:port.
func (s *Server) Addr(h int) string { return s.addrs[h] }

// Origin is host h's http://ip:port.
func (s *Server) Origin(h int) string { return "http://" + s.addrs[h] }

// Seeds are every host's home page URL.
func (s *Server) Seeds() []string {
	out := make([]string, len(s.addrs))
	for h := range s.addrs {
		out[h] = s.Origin(h) + "/"
	}
	return out
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
	s.wg.Wait()
}

// Reset forgets the request log.
func (s *Server) Reset() {
	s.mu.Lock()
	s.log = nil
	s.mu.Unlock()
}

// Log returns a copy of every request since the last Reset, in the order
// they were answered.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// robots allows everything: the benchmark is about revisits, not exclusion.
const robots = "User-agent: *\nDisallow:\n"

// Handler serves host h's pages and logs each request.
func (s *Server) Handler(h int) http.Handler {
	w := s.web
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		now := w.cfg.Now()
		cc, _ := req.Context().Value(connKey{}).(*countConn)
		var before int64
		if cc != nil {
			before = cc.n.Load()
		}
		r := Request{Host: h, Page: -1, ID: -1, Version: -1, Method: req.Method, Path: req.URL.Path, Start: now, Cond: conditional(req)}
		write := func(status int, body []byte) {
			if body != nil {
				rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
			}
			rw.WriteHeader(status)
			if len(body) > 0 && req.Method != http.MethodHead {
				n, _ := rw.Write(body)
				r.Body = int64(n)
			}
			if f, ok := rw.(http.Flusher); ok {
				f.Flush() // every byte on the wire before the count is read
			}
			r.Status = status
		}
		i := w.PageOf(req.URL.Path)
		switch {
		case req.Method != http.MethodGet && req.Method != http.MethodHead:
			rw.Header().Set("Allow", "GET, HEAD")
			write(http.StatusMethodNotAllowed, []byte("method not allowed\n"))
		case req.URL.Path == "/robots.txt":
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			write(http.StatusOK, []byte(robots))
		case i < 0:
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			write(http.StatusNotFound, []byte("404 page not found\n"))
		default:
			id := w.ID(h, i)
			v, modified := w.versionAt(id, now)
			body := w.Body(h, i, v, modified)
			r.Page, r.ID, r.Version, r.Size = i, id, v, int64(len(body))
			etags, dates := w.cfg.Validators == ValidatorsAll || w.cfg.Validators == ValidatorsETag,
				w.cfg.Validators == ValidatorsAll || w.cfg.Validators == ValidatorsLastModified
			hd := rw.Header()
			hd.Set("Content-Type", "text/html; charset=utf-8")
			if etags {
				hd.Set("ETag", ETag(id, v))
			}
			if dates {
				hd.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
			}
			if notModified(req, etags, dates, ETag(id, v), modified) {
				write(http.StatusNotModified, nil)
			} else {
				write(http.StatusOK, body)
			}
		}
		r.End = w.cfg.Now()
		if cc != nil {
			r.Wire = cc.n.Load() - before
		}
		s.mu.Lock()
		s.log = append(s.log, r)
		s.mu.Unlock()
	})
}

// conditional names the conditional headers of req.
func conditional(req *http.Request) string {
	var c []string
	if req.Header.Get("If-None-Match") != "" {
		c = append(c, "etag")
	}
	if req.Header.Get("If-Modified-Since") != "" {
		c = append(c, "date")
	}
	return strings.Join(c, "+")
}

// notModified evaluates req's conditions as RFC 9110 13.2.2 orders them: an
// If-None-Match decides alone (weak comparison); else If-Modified-Since,
// when the page carries Last-Modified. Versions begin on whole seconds, so
// the comparison is exact.
func notModified(req *http.Request, etags, dates bool, etag string, modified time.Time) bool {
	if inm := req.Header.Get("If-None-Match"); inm != "" {
		if !etags {
			return false
		}
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == etag {
				return true
			}
		}
		return false
	}
	if ims := req.Header.Get("If-Modified-Since"); ims != "" && dates {
		t, err := http.ParseTime(ims)
		return err == nil && !modified.After(t)
	}
	return false
}

// countConn counts the bytes written on a connection.
type countConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

type countListener struct{ net.Listener }

func (l countListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countConn{Conn: c}, nil
}

type connKey struct{}
