package testutil

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestCheckForSucceeds(t *testing.T) {
	var n atomic.Int32
	CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		if n.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n.Load() != 3 {
		t.Fatalf("f ran %d times, want 3", n.Load())
	}
}

func TestCheckForFailsWithLastError(t *testing.T) {
	r := &recorder{TB: t}
	var n int
	start := time.Now()
	CheckFor(r, 30*time.Millisecond, 5*time.Millisecond, func() error {
		n++
		return fmt.Errorf("attempt %d", n)
	})
	if r.failed == "" {
		t.Fatal("CheckFor did not fail")
	}
	if want := fmt.Sprintf("attempt %d", n); !strings.Contains(r.failed, want) {
		t.Fatalf("failure %q does not carry the last error %q", r.failed, want)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before total", el)
	}
}

func TestWaitFor(t *testing.T) {
	if !WaitFor(time.Second, time.Millisecond, func() bool { return true }) {
		t.Fatal("a true condition timed out")
	}
	var calls int
	if WaitFor(20*time.Millisecond, 5*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("a false condition succeeded")
	}
	if calls < 2 {
		t.Fatalf("cond ran %d times, want several", calls)
	}
	// A zero total still looks once.
	if !WaitFor(0, time.Millisecond, func() bool { return true }) {
		t.Fatal("a zero total did not check the condition")
	}
}

func TestEventually(t *testing.T) {
	var done atomic.Bool
	go func() { done.Store(true) }()
	Eventually(t, 5*time.Second, "the goroutine", done.Load)

	r := &recorder{TB: t}
	Eventually(r, 20*time.Millisecond, "never", func() bool { return false })
	if !strings.Contains(r.failed, "waiting for never") {
		t.Fatalf("failure %q", r.failed)
	}
}

func TestClock(t *testing.T) {
	var c Clock
	if got := c.Now(); !got.Equal(Epoch) {
		t.Fatalf("zero Clock reads %v, want %v", got, Epoch)
	}
	if got := c.Advance(time.Minute); !got.Equal(Epoch.Add(time.Minute)) {
		t.Fatalf("Advance returned %v", got)
	}
	if got := c.Now(); !got.Equal(Epoch.Add(time.Minute)) {
		t.Fatalf("after Advance, Now = %v", got)
	}
	at := time.Date(2030, 5, 1, 0, 0, 0, 0, time.UTC)
	c.Set(at)
	if !c.Now().Equal(at) {
		t.Fatalf("after Set, Now = %v", c.Now())
	}
	if !NewClock(at).Now().Equal(at) {
		t.Fatal("NewClock does not start at its argument")
	}

	// Concurrent readers and writers (run with -race).
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() { defer wg.Done(); c.Advance(time.Second) }()
		go func() { defer wg.Done(); _ = c.Now() }()
	}
	wg.Wait()
	if got := c.Now().Sub(at); got != 4*time.Second {
		t.Fatalf("4 concurrent Advance(1s) moved the clock %v", got)
	}
}
