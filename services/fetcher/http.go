package fetcher

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trawlerhq/trawler/pkg/config"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

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

// ErrRedirectTooLong is matched (errors.Is) by the Err of a 3xx whose
// target is longer than HTTPOptions.MaxURLLength: not followed, an error of
// the page.
var ErrRedirectTooLong = errors.New("redirect over the URL length limit")

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
	// UserAgent is sent with every request (default config.DefaultUserAgent).
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

// Error kinds, the values of Response.ErrKind.
const (
	// KindTimeout: a time limit ran out (Err matches ErrTimeout and is a
	// *TimeoutError), or the network reported a timeout.
	KindTimeout = "timeout"
	// KindDNS: the host name did not resolve (no such host, no address, a
	// failing or timed-out name server); Err is a *net.DNSError.
	KindDNS = "dns"
	// KindRefused: no TCP connection could be made: refused, or the host or
	// network is unreachable.
	KindRefused = "refused"
	// KindReset: the server reset or closed the connection before the
	// response was complete (ECONNRESET, EPIPE, an early EOF).
	KindReset = "reset"
	// KindTLS: the TLS handshake failed (untrusted or mismatched
	// certificate, alert, not TLS at all, the connection breaking during
	// it); a handshake timeout is "timeout".
	KindTLS = "tls"
	// KindBlocked: refused by the address policy before any connection;
	// Err is a *BlockedAddressError.
	KindBlocked = "blocked"
	// KindProtocol: the server's response is not valid HTTP (malformed status
	// line, headers, chunking, oversized headers, HTTP/2 errors), or its body
	// does not decode with its Content-Encoding (*DecodeError).
	KindProtocol = "protocol"
	// KindCanceled: the caller's context was canceled or its own deadline
	// passed; not the server's doing.
	KindCanceled = "canceled"
	// KindOther: anything else, e.g. an invalid URL.
	KindOther = "other"
	// KindRobots: not a Response's kind but a page's: the URL was not
	// fetched because its host's robots.txt stayed unreachable and the
	// host was given up.
	KindRobots = "robots"
	// KindSlow: the body came slower than MinTransferRate over a whole
	// window (Err is a *SlowError); the partial body is kept.
	KindSlow = "slow"
	// KindDeferred: not a Response's kind but a page's: the URL was handed
	// back unfetched (robots.txt unreachable, its server's per-IP slot
	// busy) more often than --max-deferrals and was given up.
	KindDeferred = "deferred"
	// KindLost: not a Response's kind but a page's, written by the
	// frontier: the URL's fetch result never came back --max-attempts times
	// (a fetcher crashed or stalled past the task's lease) and it was given
	// up.
	KindLost = "lost"
)

// ErrKinds lists every non-empty ErrKind of a page, e.g. to initialise
// metric labels.
var ErrKinds = []string{KindTimeout, KindDNS, KindRefused, KindReset, KindTLS, KindBlocked, KindProtocol, KindCanceled, KindOther, KindRobots, KindSlow, KindDeferred, KindLost}

// ErrTooSlow is matched (errors.Is) by the Err of a fetch whose body came
// slower than HTTPOptions.MinTransferRate (see SlowError).
var ErrTooSlow = errors.New("transfer too slow")

// SlowError is the Err of a body that brought fewer than Rate x Window bytes
// in one Window. errors.Is(err, ErrTooSlow) holds for it.
type SlowError struct {
	Rate     int64         // the floor, bytes per second
	Window   time.Duration // the window it was measured over
	Got      int64         // bytes of that window
	Received int64         // bytes of the body in all, on the wire
	Elapsed  time.Duration // since the response headers
}

func (e *SlowError) Error() string {
	return fmt.Sprintf("%s: %d bytes in the last %s (under --min-transfer-rate %d B/s), %d bytes in %s since the headers",
		ErrTooSlow, e.Got, e.Window, e.Rate, e.Received, e.Elapsed.Round(time.Millisecond))
}
func (e *SlowError) Is(target error) bool { return target == ErrTooSlow }

// TimeoutError is the Err of a fetch that ran out of time. errors.Is(err,
// ErrTimeout) holds for it.
type TimeoutError struct {
	// Stage is the limit that ran out: "connect" (ConnectTimeout), "tls"
	// (TLSHandshakeTimeout), "headers" (HeaderTimeout) or "request" (the
	// whole request's Timeout, whatever was under way).
	Stage string
	Limit time.Duration
	msg   string
}

func (e *TimeoutError) Error() string        { return e.msg }
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }
func (e *TimeoutError) Timeout() bool        { return true }

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
		o.UserAgent = config.DefaultUserAgent
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

// attempt is what one fetch learns as it goes, from the transport's trace
// hooks and the dialer (which may run on other goroutines, and may outlive
// the fetch: a dial is not canceled with its request).
type attempt struct {
	dialStage atomic.Int32 // stageNone, stageResolving, stageConnecting, stageTLS
	headers   atomic.Int32 // headersNone, headersWaiting, headersGot, headersTimedOut
	timer     atomic.Pointer[time.Timer]
	ip        atomic.Pointer[string]
	tlsErr    atomic.Pointer[error]
	conn      atomic.Bool // a connection to the server was obtained
}

const (
	stageNone = iota
	stageResolving
	stageConnecting
	stageTLS
)

const (
	headersNone     = iota // no connection yet
	headersWaiting         // connected, the response headers are awaited
	headersGot             // RoundTrip returned
	headersTimedOut        // HeaderTimeout ran out first
)

type attemptKey struct{}

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

func (a *attempt) setStage(s int32) {
	if a != nil {
		a.dialStage.Store(s)
	}
}

func (a *attempt) remoteIP() string {
	if s := a.ip.Load(); s != nil {
		return *s
	}
	return ""
}

func (a *attempt) tlsFailure() error {
	if e := a.tlsErr.Load(); e != nil {
		return *e
	}
	return nil
}

// connected reports whether a connection to the server was obtained.
func (a *attempt) connected() bool { return a.conn.Load() }

// errHeaderTimeout is the cancel cause of a request whose headers did not come
// within HeaderTimeout.
var errHeaderTimeout = errors.New("response header timeout")

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

// rateWatch counts a body's bytes as they are read and ends the request
// (cancel with a *SlowError) when a whole window brought fewer than
// rate x window of them.
type rateWatch struct {
	io.ReadCloser
	n    atomic.Int64
	done chan struct{}
}

func watchRate(body io.ReadCloser, rate int64, window time.Duration, cancel context.CancelCauseFunc) *rateWatch {
	w := &rateWatch{ReadCloser: body, done: make(chan struct{})}
	start := time.Now()
	go func() {
		t := time.NewTicker(window)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
			}
			n := w.n.Load()
			floor := int64(float64(rate) * window.Seconds())
			if got := n - last; got < floor {
				cancel(&SlowError{Rate: rate, Window: window, Got: got, Received: n, Elapsed: time.Since(start)})
				return
			}
			last = n
		}
	}()
	return w
}

func (w *rateWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	w.n.Add(int64(n))
	return n, err
}

// stop ends the watch (the body was read, or given up).
func (w *rateWatch) stop() { close(w.done) }

// armHeaderTimer starts HeaderTimeout once a connection is ready; when it
// runs out first, the request is canceled with errHeaderTimeout.
func (c *HTTPClient) armHeaderTimer(ctx context.Context, a *attempt, cancel context.CancelCauseFunc) {
	if !a.headers.CompareAndSwap(headersNone, headersWaiting) {
		return // a retry on another connection: the first timer still runs
	}
	d := c.opts.HeaderTimeout
	if d <= 0 || d >= c.opts.Timeout {
		return
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return // the request's own deadline comes first
	}
	a.timer.Store(time.AfterFunc(d, func() {
		if a.headers.CompareAndSwap(headersWaiting, headersTimedOut) {
			cancel(errHeaderTimeout)
		}
	}))
}

// readBody reads resp's body into out: skipped for its type, decoded, capped.
func (c *HTTPClient) readBody(ctx context.Context, resp *http.Response, out *Response) {
	hasBody := mayHaveBody(resp.StatusCode)
	mt := mediaType(out.ContentType)
	if hasBody && mt != "" && !c.typeAllowed(mt) {
		out.Skipped = fmt.Sprintf("content type %s not in the allow list", mt)
		return
	}
	r, wire, encoding := decodeBody(resp.Header, resp.Body, c.opts.MaxCompressedBytes)
	out.Encoding = capHeader(encoding) // the codings of every Content-Encoding line
	hint := resp.ContentLength
	if wire != nil {
		hint = -1 // the announced length is the compressed one
	}
	if hasBody && mt == "" && encoding == "" {
		// No usable Content-Type: judge by the first (decoded) bytes.
		br := bufio.NewReaderSize(r, sniffLen)
		head, err := br.Peek(sniffLen)
		if err == nil || err == io.EOF || errors.Is(err, errCompressedCap) {
			out.SniffedType = http.DetectContentType(head)
			if st := mediaType(out.SniffedType); !c.typeAllowed(st) {
				out.Skipped = fmt.Sprintf("content type %s (sniffed) not in the allow list", st)
				return
			}
		}
		// On another error, read on: readCapped reports it with what came.
		r = br
	}
	body, truncated, err := readCapped(r, c.opts.MaxBodyBytes, hint)
	if wire != nil {
		if errors.Is(err, errCompressedCap) {
			truncated, err = true, nil
		}
		err = wire.decodeErr(err, strings.Join(contentCodings(resp.Header), ", "))
	}
	out.Body, out.Truncated = body, truncated
	if err != nil {
		out.Err = c.bodyErr(ctx, err, len(body))
	}
}

// mayHaveBody reports whether a response with this status can carry a body.
func mayHaveBody(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// mediaType returns ct's media type, lower case and without parameters, or ""
// when ct does not name one ("", "html", "none").
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if typ, sub, ok := strings.Cut(mt, "/"); !ok || typ == "" || sub == "" {
		return ""
	}
	return mt
}

func (c *HTTPClient) typeAllowed(mt string) bool {
	for _, a := range c.allowed {
		if a == mt || a == "*/*" {
			return true
		}
		if typ, ok := strings.CutSuffix(a, "/*"); ok && strings.HasPrefix(mt, typ+"/") {
			return true
		}
	}
	return false
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

// requestErr explains why no response was received. prev is the header
// state RoundTrip returned in.
func (c *HTTPClient) requestErr(ctx context.Context, a *attempt, prev int32, err error) error {
	var blocked *BlockedAddressError
	if errors.As(err, &blocked) {
		return blocked
	}
	if prev == headersTimedOut {
		return &TimeoutError{Stage: "headers", Limit: c.opts.HeaderTimeout,
			msg: fmt.Sprintf("no response headers within %s", c.opts.HeaderTimeout)}
	}
	if ctx.Err() != nil {
		return c.ctxErr(ctx, c.stage(a, prev))
	}
	var te *TimeoutError
	if errors.As(err, &te) {
		return te // from the dialer: ConnectTimeout
	}
	var ne net.Error
	if tlsErr := a.tlsFailure(); tlsErr != nil && errors.As(tlsErr, &ne) && ne.Timeout() {
		return &TimeoutError{Stage: "tls", Limit: c.opts.TLSHandshakeTimeout,
			msg: fmt.Sprintf("TLS handshake not finished within %s", c.opts.TLSHandshakeTimeout)}
	}
	return err
}

// stage says what the request was doing before its response arrived.
func (c *HTTPClient) stage(a *attempt, headers int32) string {
	if headers == headersWaiting {
		return "waiting for the response headers"
	}
	switch a.dialStage.Load() {
	case stageResolving:
		return "resolving the host name"
	case stageConnecting:
		return "connecting"
	case stageTLS:
		return "in the TLS handshake"
	}
	return "waiting for a connection"
}

// bodyErr explains why the body could not be read to its end.
func (c *HTTPClient) bodyErr(ctx context.Context, err error, received int) error {
	stage := fmt.Sprintf("reading the body (%d bytes received)", received)
	if ctx.Err() != nil {
		return c.ctxErr(ctx, stage)
	}
	return fmt.Errorf("%s: %w", stage, err)
}

// ctxErr explains a request stopped by its context: the whole request's
// Timeout, or the caller. stage says what was under way.
func (c *HTTPClient) ctxErr(ctx context.Context, stage string) error {
	cause := context.Cause(ctx)
	var slow *SlowError
	if errors.As(cause, &slow) {
		return slow
	}
	if errors.Is(cause, ErrTimeout) {
		return &TimeoutError{Stage: "request", Limit: c.opts.Timeout,
			msg: fmt.Sprintf("%s after %s %s (--fetch-timeout)", ErrTimeout, c.opts.Timeout, stage)}
	}
	return fmt.Errorf("fetch canceled %s: %w", stage, cause)
}

// errKind classifies a fetch's Err (see the Kind constants).
func errKind(err error, a *attempt) string {
	if err == nil {
		return ""
	}
	var (
		blocked *BlockedAddressError
		dnsErr  *net.DNSError
		decErr  *DecodeError
		netErr  net.Error
		opErr   *net.OpError
	)
	switch {
	case errors.As(err, &blocked):
		return KindBlocked
	case errors.Is(err, ErrTooSlow):
		return KindSlow
	case errors.Is(err, ErrTimeout):
		return KindTimeout
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return KindCanceled // our own deadlines are TimeoutErrors
	case errors.As(err, &dnsErr):
		return KindDNS
	case a.tlsFailure() != nil || isTLSError(err):
		return KindTLS
	case errors.As(err, &decErr):
		return KindProtocol
	case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return KindRefused
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return KindReset
	case errors.As(err, &netErr) && netErr.Timeout():
		return KindTimeout
	case a.connected() && !errors.As(err, &opErr):
		// The server answered, and not with a network failure: what it sent
		// did not parse (net/http's parse errors are not typed).
		return KindProtocol
	}
	return KindOther
}

// noSuchHost tells whether err says the host's name does not exist
// (NXDOMAIN, or no address record), as opposed to a name server failing or
// timing out, which may pass.
func noSuchHost(err error) bool {
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

func isTLSError(err error) bool {
	var (
		rh  tls.RecordHeaderError
		al  tls.AlertError
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ci  x509.CertificateInvalidError
		ech *tls.ECHRejectionError
	)
	return errors.As(err, &rh) || errors.As(err, &al) || errors.As(err, &cv) || errors.As(err, &ua) ||
		errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &ech)
}

// readCapped reads at most limit bytes of r; it reads one byte more to tell a
// body of exactly limit bytes from a longer, truncated one. hint is the
// announced length, used only to size the buffer (never beyond limit).
func readCapped(r io.Reader, limit, hint int64) (body []byte, truncated bool, err error) {
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
		v = capHeader(v)
		if out == nil {
			out = make(map[string]string)
		}
		out[name] = v
	}
	return out
}

// capHeader bounds a kept header value to maxHeaderValue bytes.
func capHeader(v string) string {
	if len(v) > maxHeaderValue {
		return strings.ToValidUTF8(v[:maxHeaderValue], "")
	}
	return v
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

// redirect sets out.Location to a 3xx response's target, or says why the
// target is over the URL length limit (as sent, before it is parsed, or
// once resolved against the request URL).
func (c *HTTPClient) redirect(resp *http.Response, out *Response) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	limit := c.opts.MaxURLLength
	if limit <= 0 {
		limit = urlx.MaxLength
	}
	if n := len(resp.Header.Get("Location")); n > limit {
		return fmt.Errorf("%w: Location of %d bytes, over the %d-byte URL limit", ErrRedirectTooLong, n, limit)
	}
	target := redirectTarget(resp)
	if len(target) > limit {
		return fmt.Errorf("%w: target of %d bytes, over the %d-byte URL limit", ErrRedirectTooLong, len(target), limit)
	}
	out.Location = target
	return nil
}

// errorText is an error's text as a page records it: at most maxErrorText
// bytes, valid UTF-8.
func errorText(s string) string {
	if len(s) > maxErrorText {
		s = strings.ToValidUTF8(s[:maxErrorText], "") + "…"
	}
	return s
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

// netResolver adapts a *net.Resolver to Resolver.
type netResolver struct{ r *net.Resolver }

func (n netResolver) LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	return n.r.LookupNetIP(ctx, "ip", host)
}

// dialer connects the transport to a host: it resolves the name with the
// Resolver, refuses non-public addresses before any connection (unless
// AllowPrivate), then tries the addresses in the resolver's order until one
// connects, all within ConnectTimeout. The net.Dialer's Control checks each
// address again just before connect, as defence in depth.
type dialer struct {
	resolver   Resolver
	guard      guard
	timeout    time.Duration
	minAttempt time.Duration
	// dialAddr connects to one "ip:port"; tests replace it to watch dials.
	dialAddr func(ctx context.Context, network, address string) (net.Conn, error)
}

func newDialer(o HTTPOptions) *dialer {
	g := guard{allowPrivate: o.AllowPrivate, allowLinkLocal: o.AllowLinkLocal}
	nd := &net.Dialer{KeepAlive: 30 * time.Second, Control: g.control}
	return &dialer{
		resolver:   o.Resolver,
		guard:      g,
		timeout:    o.ConnectTimeout,
		minAttempt: minAttemptTimeout,
		dialAddr:   nd.DialContext,
	}
}

// errConnectTimeout is the cancel cause of a dial that ran out of
// ConnectTimeout.
var errConnectTimeout = errors.New("connect timeout")

// DialContext is the transport's DialContext. ctx is not canceled with the
// request (net/http lets a dial finish for later requests): ConnectTimeout
// bounds it.
func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	a := attemptFrom(ctx)
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %q: %w", address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %q: invalid port", address)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d.timeout, errConnectTimeout)
	defer cancel()
	timedOut := func() error {
		return &TimeoutError{Stage: "connect", Limit: d.timeout,
			msg: fmt.Sprintf("no connection to %s within %s", address, d.timeout)}
	}

	a.setStage(stageResolving)
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		if errors.Is(context.Cause(ctx), errConnectTimeout) {
			return nil, timedOut()
		}
		return nil, err
	}
	candidates, blocked := d.guard.filter(addrs)
	if len(candidates) == 0 {
		if blocked != nil {
			return nil, blocked
		}
		return nil, &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
	}

	a.setStage(stageConnecting)
	var first error
	for i, ip := range candidates {
		actx, acancel := d.attemptContext(ctx, len(candidates)-i)
		conn, err := d.dialAddr(actx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		acancel()
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if errors.Is(context.Cause(ctx), errConnectTimeout) {
		return nil, timedOut()
	}
	return nil, first
}

// resolve returns host's addresses: host itself when it is an IP literal.
func (d *dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	addrs, err := d.resolver.LookupNetIP(ctx, host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return nil, err
		}
		return nil, &net.DNSError{Err: err.Error(), Name: host, UnwrapErr: err}
	}
	return addrs, nil
}

// attemptContext shares the time left among the addresses left to try, so
// that one address that does not answer leaves time for the next; each gets
// at least minAttempt if there is that much left.
func (d *dialer) attemptContext(ctx context.Context, left int) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok || left <= 1 {
		return context.WithCancel(ctx)
	}
	remaining := time.Until(dl)
	each := remaining / time.Duration(left)
	if each < d.minAttempt {
		each = min(d.minAttempt, remaining)
	}
	return context.WithTimeout(ctx, each)
}
