package fetcher

// The HTTP client's settings: its defaults, limits, resolver and options,
// and the per-request options of a conditional GET.

import (
	"context"
	"net/netip"
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
	// Sitemap takes the body of a sitemap file too: XML and gzip besides
	// AllowedTypes.
	Sitemap bool
}

// SitemapTypes are the media types a sitemap file comes as, taken for a
// FetchOptions.Sitemap request whatever AllowedTypes says.
var SitemapTypes = []string{"application/xml", "text/xml", "application/gzip", "application/x-gzip", "text/plain"}
