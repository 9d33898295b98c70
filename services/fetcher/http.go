package fetcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// DefaultUserAgent identifies the crawler with a contact URL, as polite
// crawlers do.
const DefaultUserAgent = "Trawler/0.1 (+https://github.com/trawlerhq/trawler)"

// Defaults used when an HTTPOptions field is left zero.
const (
	defaultTimeout      = 30 * time.Second
	defaultMaxBodyBytes = 1 << 20
	// maxConnectTimeout bounds the default ConnectTimeout (and so the default
	// TLSHandshakeTimeout) whatever the Timeout.
	maxConnectTimeout = 10 * time.Second
)

// DefaultAllowedTypes are the media types whose bodies are downloaded when
// HTTPOptions.AllowedTypes is empty: what the parser can read.
var DefaultAllowedTypes = []string{"text/html", "application/xhtml+xml", "text/plain"}

// Transport limits.
const (
	// maxResponseHeaderBytes bounds a response's headers in all (Go's
	// default is 1 MiB; Chrome's 256 KiB): larger is a protocol error of
	// the page, not a crawler's problem.
	maxResponseHeaderBytes = 128 << 10
	// Politeness allows one request in flight per host, so a couple of idle
	// connections per host is all keep-alive can use.
	maxIdleConnsPerHost = 2
	maxIdleConns        = 256
	idleConnTimeout     = 60 * time.Second
	// maxHeaderValue bounds each value kept in Response.Headers, and
	// ContentType: they travel in a NATS message header (JetStream refuses
	// headers over 64 KiB; issue 19: a 70 KB Content-Type left no record).
	maxHeaderValue = 1024
	// maxErrorText bounds Response.Err's text as a page records it: Go's
	// errors may quote what the server sent (a malformed status or header
	// line of up to maxResponseHeaderBytes).
	maxErrorText = 1024
	// sniffLen is how much of a body without a Content-Type is read to guess
	// its type (all http.DetectContentType looks at).
	sniffLen = 512
	// minAttemptTimeout is the least time one address of several gets to
	// connect, if the connect timeout leaves that much (as net.Dialer does).
	minAttemptTimeout = 2 * time.Second
	// defaultMinRateWindow is MinTransferRate's window: short enough to free
	// a worker well before --fetch-timeout, long enough that a server's
	// pause of a second or two (a slow disk, a GC) is not judged.
	defaultMinRateWindow = 5 * time.Second
)

const acceptHeader = "text/html,application/xhtml+xml,*/*;q=0.8"

// keptHeaders are the response headers copied into Response.Headers: those a
// parser, an archive or a politeness policy may want.
var keptHeaders = []string{
	"Content-Type", "Content-Length", "Content-Encoding", "Content-Language",
	"Last-Modified", "ETag", "Location", "Refresh", "Link",
	"Cache-Control", "Expires", "Retry-After", "X-Robots-Tag",
}

// ErrTimeout is matched (errors.Is) by the Err of a fetch that ran out of
// time, whichever limit ran out (see TimeoutError).
var ErrTimeout = errors.New("fetch timed out")

// Resolver resolves host names to addresses. *net.Resolver does not satisfy
// it as is (its LookupNetIP takes a network too); a nil Resolver in
// HTTPOptions means net.DefaultResolver, looking up both IPv4 and IPv6.
type Resolver interface {
	LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error)
}

// HTTPOptions configures an HTTPClient. Zero values get safe defaults.
//
// Time limits nest: the whole request gets Timeout; within it, resolving and
// connecting get ConnectTimeout, the TLS handshake TLSHandshakeTimeout, and
// the wait for response headers HeaderTimeout. Each stage's limit is meant to
// be shorter than Timeout so that a stalled stage is reported as such ("no
// response headers within 10s") rather than as the whole fetch timing out.
type HTTPOptions struct {
	// Timeout bounds the whole request, from resolving the host to the end
	// of the body (default 30s).
	Timeout time.Duration
	// ConnectTimeout bounds resolving the host and connecting to it, over
	// all of its addresses (default Timeout/3 rounded to the millisecond, at
	// most 10s; never more than Timeout). When a name has several addresses
	// the time left is shared among those left to try (at least 2s each if
	// there is that much), so one that does not answer leaves time for the
	// next.
	ConnectTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake of an https connection
	// (default ConnectTimeout; never more than Timeout).
	TLSHandshakeTimeout time.Duration
	// HeaderTimeout bounds the wait for the response headers, from the moment
	// a connection is ready (default Timeout/3, rounded to the millisecond:
	// 10s for the default Timeout). A value not below Timeout
	// turns it off: Timeout alone then bounds the wait. It is also not armed
	// when less than HeaderTimeout is left of the request's time, so the two
	// never race.
	HeaderTimeout time.Duration
	// MaxBodyBytes caps the body kept, after decompression (default 1 MiB).
	// A longer body is cut there and marked Truncated.
	MaxBodyBytes int64
	// MaxCompressedBytes caps the bytes read from the network for a body we
	// decompress (default MaxBodyBytes). A body cut by it is marked Truncated.
	MaxCompressedBytes int64
	// AllowedTypes lists the media types whose bodies are downloaded
	// (default DefaultAllowedTypes). Entries are compared case-insensitively
	// with the Content-Type's media type, parameters aside; "text/*" allows a
	// whole type and "*/*" everything. Other responses are recorded without
	// their body (Response.Skipped).
	AllowedTypes []string
	// UserAgent is sent with every request (default DefaultUserAgent).
	UserAgent string
	// AllowPrivate permits loopback, private, CGNAT, benchmarking and
	// documentation addresses; refused by default (see guard.go).
	AllowPrivate bool
	// AllowLinkLocal permits, with AllowPrivate, link-local addresses and
	// the cloud metadata services.
	AllowLinkLocal bool
	// Resolver resolves host names (default net.DefaultResolver). Every
	// address it returns is checked before any connection is attempted.
	Resolver Resolver
	// MaxURLLength bounds a redirect's target (--max-url-length; default
	// urlx.MaxLength): a 3xx whose Location, as sent or resolved, is longer
	// is an error of the page (KindProtocol, recorded, never followed).
	MaxURLLength int
	// MinTransferRate, when positive, is the least a body must deliver, in
	// bytes per second on the wire (--min-transfer-rate), measured over each
	// MinRateWindow from the response headers on: a body that brings fewer
	// than MinTransferRate x MinRateWindow bytes in one window is ended with
	// a *SlowError (KindSlow), its partial body kept. 0 turns it off; a
	// body that ends within the first window is never judged.
	MinTransferRate int64
	// MinRateWindow is the window of MinTransferRate (default 5s).
	MinRateWindow time.Duration
}

// FetchOptions are per-request settings for FetchWith.
type FetchOptions struct {
	// IfNoneMatch and IfModifiedSince, when set, are sent as the If-None-Match
	// and If-Modified-Since validators of a conditional GET: pass a previous
	// response's Headers["ETag"] and Headers["Last-Modified"]. An unchanged
	// page then comes back as a 304 with no body, which is a normal response
	// (Err nil).
	IfNoneMatch     string
	IfModifiedSince string
}

// Response is the outcome of one fetch. Err is nil when a complete HTTP
// response was received, whatever its status (a body cut at a cap counts as
// complete, with Truncated set, and so does a body skipped for its type).
// When the connection fails after the headers arrived, Status, headers and the
// partial Body are kept and Err is set.
type Response struct {
	Status int
	// ContentType is the Content-Type header as sent, "" if none.
	ContentType string
	// SniffedType is http.DetectContentType's guess from the body's first
	// bytes when the response had no usable Content-Type; "" otherwise.
	SniffedType string
	// Headers holds the first value of a few useful headers (keptHeaders),
	// as sent: Content-Length and Content-Encoding describe the body on the
	// wire, before decoding.
	Headers map[string]string
	// Location is a 3xx response's target, absolute; "" otherwise.
	Location string
	// Body is the body, decoded from its Content-Encoding unless Encoding
	// says otherwise, and at most MaxBodyBytes long.
	Body []byte
	// Encoding is the content coding Body is still in: "" when the body had
	// none or was decoded (gzip, deflate, br); otherwise the Content-Encoding
	// (lower case, e.g. "zstd"), whose bytes are kept raw.
	Encoding string
	// Truncated says the body went beyond MaxBodyBytes, or its compressed
	// form beyond MaxCompressedBytes, and was cut.
	Truncated bool
	// Skipped, when set, says why the body was not downloaded, e.g. "content
	// type application/pdf not in the allow list". Status and headers are
	// kept; Body is empty; Err is nil.
	Skipped string
	// IP is the remote address the request was sent to, "" if none.
	IP       string
	Duration time.Duration
	Err      error
	// ErrKind classifies Err for metrics: one of the Kind constants, "" when
	// Err is nil.
	ErrKind string
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
	allowed   []string // AllowedTypes, lower case
	dialer    *dialer
	transport *http.Transport
}

// NewHTTPClient returns a client configured by o.
func NewHTTPClient(o HTTPOptions) *HTTPClient {
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	// A third of Timeout for each stage, so a stalled stage reports itself;
	// a Timeout too small to divide leaves the stages to Timeout alone.
	third := o.Timeout / 3
	if third >= time.Millisecond {
		third = third.Round(time.Millisecond)
	}
	if third <= 0 {
		third = o.Timeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = min(third, maxConnectTimeout)
	}
	o.ConnectTimeout = min(o.ConnectTimeout, o.Timeout)
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = o.ConnectTimeout
	}
	o.TLSHandshakeTimeout = min(o.TLSHandshakeTimeout, o.Timeout)
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = third
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.MaxCompressedBytes <= 0 {
		o.MaxCompressedBytes = o.MaxBodyBytes
	}
	if len(o.AllowedTypes) == 0 {
		o.AllowedTypes = DefaultAllowedTypes
	}
	o.AllowedTypes = append([]string(nil), o.AllowedTypes...)
	allowed := make([]string, len(o.AllowedTypes))
	for i, t := range o.AllowedTypes {
		allowed[i] = strings.ToLower(strings.TrimSpace(t))
	}
	if strings.TrimSpace(o.UserAgent) == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Resolver == nil {
		o.Resolver = netResolver{net.DefaultResolver}
	}
	if o.MinRateWindow <= 0 {
		o.MinRateWindow = defaultMinRateWindow
	}
	d := newDialer(o)
	t := &http.Transport{
		Proxy:               nil, // a proxy would make the address check meaningless
		DialContext:         d.DialContext,
		ForceAttemptHTTP2:   true, // a custom DialContext disables HTTP/2 otherwise
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: o.TLSHandshakeTimeout,
		// We ask for gzip, deflate and br and decode them ourselves, so that
		// the compressed bytes read have their own cap.
		DisableCompression: true,
		// No ResponseHeaderTimeout: HeaderTimeout is a timer on the request's
		// context (see fetch), so it reports its own error and never races
		// the whole request's deadline.
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		MaxIdleConns:           maxIdleConns,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		IdleConnTimeout:        idleConnTimeout,
	}
	return &HTTPClient{opts: o, allowed: allowed, dialer: d, transport: t}
}

// Options returns the client's options, defaults filled in.
func (c *HTTPClient) Options() HTTPOptions {
	o := c.opts
	o.AllowedTypes = append([]string(nil), o.AllowedTypes...)
	return o
}

// CloseIdleConnections closes kept-alive connections not in use.
func (c *HTTPClient) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Fetch GETs rawURL once. Failures are reported in Response.Err, never panics.
func (c *HTTPClient) Fetch(ctx context.Context, rawURL string) Response {
	return c.FetchWith(ctx, rawURL, FetchOptions{})
}

// FetchWith GETs rawURL once with per-request options, e.g. the validators of
// a conditional GET. Failures are reported in Response.Err, never panics.
func (c *HTTPClient) FetchWith(ctx context.Context, rawURL string, fo FetchOptions) Response {
	start := time.Now()
	a := &attempt{}
	r := c.fetch(ctx, rawURL, fo, a)
	r.Duration = time.Since(start)
	r.IP = a.remoteIP()
	r.ErrKind = errKind(r.Err, a)
	return r
}

func (c *HTTPClient) fetch(ctx context.Context, rawURL string, fo FetchOptions, a *attempt) Response {
	u, err := parseURL(rawURL)
	if err != nil {
		return Response{Err: err}
	}
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, c.opts.Timeout, ErrTimeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	ctx = context.WithValue(ctx, attemptKey{}, a)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			s := remoteIP(info.Conn)
			a.ip.Store(&s)
			a.conn.Store(true)
			c.armHeaderTimer(ctx, a, cancel)
		},
		TLSHandshakeStart: func() { a.setStage(stageTLS) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				a.tlsErr.Store(&err)
			}
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Response{Err: fmt.Errorf("invalid URL %q: %w", rawURL, err)}
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	if fo.IfNoneMatch != "" {
		req.Header.Set("If-None-Match", fo.IfNoneMatch)
	}
	if fo.IfModifiedSince != "" {
		req.Header.Set("If-Modified-Since", fo.IfModifiedSince)
	}

	resp, err := c.transport.RoundTrip(req)
	prev := a.headers.Swap(headersGot)
	if t := a.timer.Load(); t != nil {
		t.Stop()
	}
	if err == nil && prev == headersTimedOut {
		// The headers came just as HeaderTimeout ran out: it fired first.
		resp.Body.Close()
		err = errHeaderTimeout
	}
	if err != nil {
		return Response{Err: c.requestErr(ctx, a, prev, err)}
	}
	defer resp.Body.Close()

	out := Response{
		Status:      resp.StatusCode,
		ContentType: capHeader(resp.Header.Get("Content-Type")),
		Headers:     keepHeaders(resp.Header),
	}
	// An oversized target would not fit the page's NATS header, nor be
	// crawled (issue 19: a 900 KB Location was refetched 10 times and
	// dead-lettered, no record): it is an error of the page, recorded.
	if err := c.redirect(resp, &out); err != nil {
		out.Err, out.ErrKind = err, KindProtocol
		return out
	}
	if c.opts.MinTransferRate > 0 && mayHaveBody(resp.StatusCode) {
		w := watchRate(resp.Body, c.opts.MinTransferRate, c.opts.MinRateWindow, cancel)
		defer w.stop()
		resp.Body = w
	}
	c.readBody(ctx, resp, &out)
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
