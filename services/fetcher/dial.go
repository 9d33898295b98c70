package fetcher

// Dialing: each attempt's stage (for the error shown), the resolver, and
// the dialer that resolves a name, checks every address against the guard and
// bounds each connect by the fetch's deadline.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"
)

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
