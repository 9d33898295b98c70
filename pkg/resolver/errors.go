package resolver

import (
	"context"
	"errors"
	"net"
)

// Errors returned by LookupNetIP are *net.DNSError values (so code written for
// net.Resolver keeps working: IsNotFound, Timeout(), Temporary()) that unwrap to
// one of these, or to the caller's context error.
var (
	// ErrNotFound: NXDOMAIN, no A or AAAA record, or a malformed name.
	ErrNotFound = errors.New("no such host")
	// ErrServerFailure: SERVFAIL, REFUSED or another error code, or an
	// answer that could not be used.
	ErrServerFailure = errors.New("server misbehaving")
	// ErrTimeout: no server answered within Timeout, Attempts times.
	ErrTimeout = errors.New("i/o timeout")
)

// failure is how a failed lookup is kept in the cache: the name is filled in
// per caller, so cached errors are never shared between callers.
type failure struct {
	err       error // ErrNotFound, ErrServerFailure or ErrTimeout
	server    string
	timeout   bool
	temporary bool
}

var (
	failNotFound = &failure{err: ErrNotFound}
	failTimeout  = &failure{err: ErrTimeout, timeout: true, temporary: true}
)

func failServer(server string) *failure {
	return &failure{err: ErrServerFailure, server: server, temporary: true}
}

// forHost returns the error a caller sees for host, e.g.
// "lookup example.invalid: no such host".
func (f *failure) forHost(host string) error {
	return &net.DNSError{
		UnwrapErr:   f.err,
		Err:         f.err.Error(),
		Name:        host,
		Server:      f.server,
		IsTimeout:   f.timeout,
		IsTemporary: f.temporary,
		IsNotFound:  f.err == ErrNotFound,
	}
}

// ctxError wraps the caller's context error, as net.Resolver does.
func ctxError(host string, err error) error {
	return &net.DNSError{
		UnwrapErr: err,
		Err:       err.Error(),
		Name:      host,
		IsTimeout: errors.Is(err, context.DeadlineExceeded),
	}
}
