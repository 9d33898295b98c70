// Package testutil holds the helpers every package's tests share: polling
// for a condition instead of sleeping (CheckFor, WaitFor, Eventually) and a
// manual clock (Clock) for code whose behaviour time drives.
//
// A test waits for what it needs, never for a guessed duration: a sleep long
// enough on a loaded CI machine is wasted time everywhere else, and one short
// enough for a laptop fails on CI. Sleeps that remain in tests are the
// behaviour under test (pacing, a peer that answers slowly) and say so.
package testutil

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"
)

// CheckFor calls f every interval until it returns nil, and fails tb with
// f's last error when total has passed (nats-server's checkFor). f runs at
// least once. Call it from the test's goroutine: it stops the test with
// tb.Fatalf.
func CheckFor(tb testing.TB, total, interval time.Duration, f func() error) {
	tb.Helper()
	deadline := time.Now().Add(total)
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(interval)
	}
	tb.Fatalf("after %v: %v", total, err)
}

// WaitFor polls cond every interval until it is true or total has passed,
// and reports whether it became true. cond runs at least once. It fails
// nothing: use it where a timeout is an answer, or from a goroutine.
func WaitFor(total, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(total)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// Eventually is CheckFor for a condition without an error of its own: it
// polls cond every 10 ms and fails tb with "timed out waiting for <what>"
// after total.
func Eventually(tb testing.TB, total time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !WaitFor(total, 10*time.Millisecond, cond) {
		tb.Fatalf("timed out after %v waiting for %s", total, what)
	}
}

// Clock is a manual clock for tests: Now returns the time it was set to and
// moves only when the test calls Advance or Set. Inject c.Now where the code
// takes a `Now func() time.Time` option (default time.Now). It is safe for
// concurrent use. The zero Clock starts at a fixed instant, not at the zero
// time, so that durations to and from it do not overflow.
type Clock struct {
	mu  sync.Mutex
	now time.Time // guarded by mu; zero means Epoch
}

// Epoch is where a zero Clock starts: a fixed, ordinary instant.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewClock returns a Clock that reads start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = Epoch
	}
	return c.now
}

// Advance moves the clock forward by d (backwards when d is negative, to
// test a clock step) and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = Epoch
	}
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (a logger, a
// server's goroutines) and a reader.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Len is the number of bytes written.
func (s *SyncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// Tail is the last n bytes written, after an ellipsis when there were more.
func (s *SyncBuffer) Tail(n int) string {
	str := s.String()
	if len(str) > n {
		str = "…" + str[len(str)-n:]
	}
	return str
}

// ClosedAddr is a loopback host:port where nothing listens (a listener
// opened and closed at once): a connection there is refused.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
