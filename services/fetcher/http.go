package fetcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trawlerhq/trawler/pkg/config"
)

// Defaults used when an HTTPOptions field is left zero.
const (
	defaultTimeout      = 30 * time.Second
	defaultMaxBodyBytes = 1 << 20
)

// Transport limits. Each stage gets at most this long, and never more than the
// whole request's Timeout.
const (
	maxDialTimeout         = 10 * time.Second
	maxTLSHandshakeTimeout = 10 * time.Second
	maxResponseHeaderBytes = 1 << 20
	// Politeness allows one request in flight per host, so a couple of idle
	// connections per host is all keep-alive can use.
	maxIdleConnsPerHost = 2
	maxIdleConns        = 256
	idleConnTimeout     = 60 * time.Second
	// maxHeaderValue bounds each value kept in Response.Headers: they travel in
	// a NATS message header.
	maxHeaderValue = 1024
)

const acceptHeader = "text/html,application/xhtml+xml,*/*;q=0.8"

// keptHeaders are the response headers copied into Response.Headers: those a
// parser, an archive or a politeness policy may want.
var keptHeaders = []string{
	"Content-Type", "Content-Length", "Content-Encoding", "Content-Language",
	"Last-Modified", "ETag", "Location", "Refresh", "Link",
	"Cache-Control", "Expires", "Retry-After", "X-Robots-Tag",
}

// ErrTimeout is matched (errors.Is) by the Err of a fetch that ran out of time.
var ErrTimeout = errors.New("fetch timed out")

// HTTPOptions configures an HTTPClient. Zero values get safe defaults.
type HTTPOptions struct {
	Timeout      time.Duration // whole request, body included (default 30s)
	MaxBodyBytes int64         // body cap after decompression (default 1 MiB)
	UserAgent    string        // default config.DefaultUserAgent
	AllowPrivate bool          // permit loopback, private, link-local... addresses
}

// Response is the outcome of one fetch. Err is nil when a complete HTTP
// response was received, whatever its status (a body cut at MaxBodyBytes counts
// as complete, with Truncated set). When the connection fails after the headers
// arrived, Status, headers and the partial Body are kept and Err is set.
type Response struct {
	Status      int
	ContentType string
	// Headers holds the first value of a few useful headers (keptHeaders).
	Headers map[string]string
	// Location is a 3xx response's target, absolute; "" otherwise.
	Location  string
	Body      []byte
	Truncated bool
	// IP is the remote address the request was sent to, "" if none.
	IP       string
	Duration time.Duration
	Err      error
}

// HTTPClient fetches single URLs without following redirects, refusing
// private addresses unless allowed. It is safe for concurrent use.
//
// It sends each request with Transport.RoundTrip rather than an http.Client:
// the pipeline reports a redirect's target as a discovered URL (deduplicated,
// scoped and scheduled like any other), and a client would turn a 3xx with a
// malformed Location into an error, losing the response.
type HTTPClient struct {
	opts      HTTPOptions
	transport *http.Transport
}

// NewHTTPClient returns a client configured by o.
func NewHTTPClient(o HTTPOptions) *HTTPClient {
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if strings.TrimSpace(o.UserAgent) == "" {
		o.UserAgent = config.DefaultUserAgent
	}
	dialer := &net.Dialer{
		Timeout:   min(o.Timeout, maxDialTimeout),
		KeepAlive: 30 * time.Second,
	}
	if !o.AllowPrivate {
		// Control sees the resolved address just before connect, so neither
		// a hostname nor DNS rebinding can sneak a private address past it.
		dialer.Control = refusePrivate
	}
	t := &http.Transport{
		Proxy:               nil, // a proxy would make the address check meaningless
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true, // a custom DialContext disables HTTP/2 otherwise
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: min(o.Timeout, maxTLSHandshakeTimeout),
		// No ResponseHeaderTimeout: the request's context already bounds the
		// wait for headers (and the body); a second timer of the same length
		// would race it and report a vaguer error.
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		MaxIdleConns:           maxIdleConns,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		IdleConnTimeout:        idleConnTimeout,
	}
	return &HTTPClient{opts: o, transport: t}
}

// CloseIdleConnections closes kept-alive connections not in use.
func (c *HTTPClient) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Fetch GETs rawURL once. Failures are reported in Response.Err, never panics.
func (c *HTTPClient) Fetch(ctx context.Context, rawURL string) Response {
	start := time.Now()
	r := c.fetch(ctx, rawURL)
	r.Duration = time.Since(start)
	return r
}

func (c *HTTPClient) fetch(ctx context.Context, rawURL string) Response {
	u, err := parseURL(rawURL)
	if err != nil {
		return Response{Err: err}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.opts.Timeout, ErrTimeout)
	defer cancel()

	var ip atomic.Pointer[string]
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			s := remoteIP(info.Conn)
			ip.Store(&s)
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Response{Err: fmt.Errorf("invalid URL %q: %w", rawURL, err)}
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	req.Header.Set("Accept", acceptHeader)
	// No Accept-Encoding: the transport then asks for gzip itself and
	// decompresses transparently, so the body cap applies to decompressed bytes.

	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		return Response{Err: c.requestErr(ctx, err), IP: load(&ip)}
	}
	defer resp.Body.Close()

	out := Response{
		Status:      resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"),
		Headers:     keepHeaders(resp.Header),
		Location:    redirectTarget(resp),
	}
	out.Body, out.Truncated, err = readBody(resp.Body, c.opts.MaxBodyBytes, resp.ContentLength)
	if err != nil {
		out.Err = c.bodyErr(ctx, err, len(out.Body))
	}
	out.IP = load(&ip)
	return out
}

// parseURL accepts absolute http and https URLs with a host.
func parseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid URL %q: scheme %q is not http or https", rawURL, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("invalid URL %q: no host", rawURL)
	}
	return u, nil
}

// requestErr explains why no response was received.
func (c *HTTPClient) requestErr(ctx context.Context, err error) error {
	var blocked *BlockedAddressError
	if errors.As(err, &blocked) {
		return blocked
	}
	if e := c.timeoutErr(ctx, err, "waiting for the response"); e != nil {
		return e
	}
	return err
}

// bodyErr explains why the body could not be read to its end.
func (c *HTTPClient) bodyErr(ctx context.Context, err error, received int) error {
	stage := fmt.Sprintf("reading the body (%d bytes received)", received)
	if e := c.timeoutErr(ctx, err, stage); e != nil {
		return e
	}
	return fmt.Errorf("%s: %w", stage, err)
}

// timeoutErr returns a clear error when err comes from the request running out
// of time or being canceled, and nil otherwise. stage says what was under way.
func (c *HTTPClient) timeoutErr(ctx context.Context, err error, stage string) error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, ErrTimeout) {
			return fmt.Errorf("%w after %s %s (--fetch-timeout)", ErrTimeout, c.opts.Timeout, stage)
		}
		return fmt.Errorf("fetch canceled %s: %w", stage, cause)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// A transport stage timed out on its own timer (dial, TLS handshake).
		return fmt.Errorf("%w %s: %w", ErrTimeout, stage, err)
	}
	return nil
}

// readBody reads at most limit bytes of r; it reads one byte more to tell a
// body of exactly limit bytes from a longer, truncated one. hint is the
// announced length, used only to size the buffer (never beyond limit).
func readBody(r io.Reader, limit, hint int64) (body []byte, truncated bool, err error) {
	size := int64(512)
	if hint >= 0 {
		size = min(hint, limit) + 1 // room for the EOF read
	}
	b := make([]byte, 0, size)
	lr := io.LimitReader(r, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return b, false, err
		}
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}

// keepHeaders copies the first value of each kept header, bounded in length.
func keepHeaders(h http.Header) map[string]string {
	var out map[string]string
	for _, name := range keptHeaders {
		v := h.Get(name)
		if v == "" {
			continue
		}
		if len(v) > maxHeaderValue {
			v = strings.ToValidUTF8(v[:maxHeaderValue], "")
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[name] = v
	}
	return out
}

// redirectTarget returns a 3xx response's Location resolved against the
// request URL, or "" when there is none or it does not parse.
func redirectTarget(resp *http.Response) string {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return ""
	}
	loc, err := resp.Location()
	if err != nil {
		return ""
	}
	return loc.String()
}

func remoteIP(conn net.Conn) string {
	if conn == nil || conn.RemoteAddr() == nil {
		return ""
	}
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err != nil {
		return ""
	}
	return ap.Addr().Unmap().WithZone("").String()
}

func load(p *atomic.Pointer[string]) string {
	if s := p.Load(); s != nil {
		return *s
	}
	return ""
}

// BlockedAddressError is the Err of a fetch refused because the host resolved
// to an address that is not publicly routable.
type BlockedAddressError struct {
	Addr   netip.Addr
	Reason string // e.g. "loopback", "private", "link-local"
}

func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("blocked address %s (%s); pass --allow-private to permit", e.Addr, e.Reason)
}

// refusePrivate is a net.Dialer Control function: it runs after the socket is
// created and before connect, with the resolved "ip:port".
func refusePrivate(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to dial %q: not an IP address and port", address)
	}
	if reason := nonPublic(ap.Addr()); reason != "" {
		return &BlockedAddressError{Addr: ap.Addr().Unmap(), Reason: reason}
	}
	return nil
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

// nonPublic names the class of a that makes it unfit for crawling, or returns
// "" for an address the crawler may connect to.
func nonPublic(a netip.Addr) string {
	a = a.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "unspecified"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local" // includes cloud metadata, 169.254.169.254
	case a.IsMulticast() || a == broadcast:
		return "multicast"
	case cgnat.Contains(a):
		return "carrier-grade NAT"
	}
	return ""
}
