package fetcher

// Fetch errors: the kinds a failed fetch is counted under (error_kind on
// pages.fetched and the done report), and the one-line reason shown to the
// user for each stage a fetch can fail in.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

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

func (e *TimeoutError) Error() string { return e.msg }

func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

func (e *TimeoutError) Timeout() bool { return true }

// errHeaderTimeout is the cancel cause of a request whose headers did not come
// within HeaderTimeout.
var errHeaderTimeout = errors.New("response header timeout")

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

// errorText is an error's text as a page records it: at most maxErrorText
// bytes, valid UTF-8.
func errorText(s string) string {
	if len(s) > maxErrorText {
		s = strings.ToValidUTF8(s[:maxErrorText], "") + "…"
	}
	return s
}
