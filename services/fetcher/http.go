package fetcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"
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
	var watch *rateWatch
	if c.opts.MinTransferRate > 0 && mayHaveBody(resp.StatusCode) {
		watch = watchRate(resp.Body, c.opts.MinTransferRate, c.opts.MinRateWindow, cancel)
		defer watch.stop()
		resp.Body = watch
	}
	c.readBody(ctx, resp, &out, fo.Sitemap)
	if slow := (*SlowError)(nil); watch != nil && errors.As(out.Err, &slow) {
		// A read in flight when the watch gave up may still have brought
		// a chunk, kept in the body: count what was read in the end.
		slow.Received = watch.n.Load()
	}
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
