package fetcher

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// trickleServer serves chunk bytes every every, n times, flushing each.
func trickleServer(t *testing.T, chunk int, every time.Duration, n int) string {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		part := []byte(strings.Repeat("x", chunk))
		for i := 0; i < n; i++ {
			if _, err := w.Write(part); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(every):
			}
		}
	}).URL
}

// A body under the floor ends after its first window, well before the
// whole-request deadline, as "slow", with what came kept.
func TestMinTransferRateEndsASlowBody(t *testing.T) {
	url := trickleServer(t, 50, 100*time.Millisecond, 1000) // 500 B/s for 100 s
	c := newClient(t, HTTPOptions{Timeout: 20 * time.Second, AllowPrivate: true, MinTransferRate: 1024, MinRateWindow: 400 * time.Millisecond})
	start := time.Now()
	r := c.Fetch(context.Background(), url)
	elapsed := time.Since(start)
	var slow *SlowError
	if !errors.As(r.Err, &slow) || !errors.Is(r.Err, ErrTooSlow) || r.ErrKind != KindSlow {
		t.Fatalf("Err = %v (kind %q), want a *SlowError of kind slow", r.Err, r.ErrKind)
	}
	if elapsed < 400*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("ended after %v; want about one 400ms window", elapsed)
	}
	if slow.Rate != 1024 || slow.Window != 400*time.Millisecond || slow.Got >= 1024*4/10 || slow.Received == 0 {
		t.Errorf("SlowError %+v", slow)
	}
	if r.Status != 200 || len(r.Body) == 0 || int64(len(r.Body)) != slow.Received {
		t.Errorf("status %d, %d body bytes (error says %d): want the partial body kept", r.Status, len(r.Body), slow.Received)
	}
	if !strings.Contains(r.Err.Error(), "--min-transfer-rate 1024 B/s") {
		t.Errorf("error %q does not name the setting", r.Err)
	}
}

// A body that stalls after a fast start is judged by the window it stalls
// in, not by its mean.
func TestMinTransferRateEndsAStall(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 64<<10)))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := newClient(t, HTTPOptions{Timeout: 20 * time.Second, AllowPrivate: true, MinTransferRate: 1024, MinRateWindow: 300 * time.Millisecond})
	start := time.Now()
	r := c.Fetch(context.Background(), srv.URL)
	if r.ErrKind != KindSlow || len(r.Body) != 64<<10 {
		t.Fatalf("Err = %v (kind %q), %d bytes; want slow with 64 KiB kept", r.Err, r.ErrKind, len(r.Body))
	}
	// First window: 64 KiB, fine; the second brings nothing.
	if e := time.Since(start); e < 600*time.Millisecond || e > 3*time.Second {
		t.Errorf("ended after %v; want about two 300ms windows", e)
	}
}

// A body at or above the floor is read to its end, over several windows;
// with the floor off, a slow one is too.
func TestMinTransferRateLetsSteadyBodiesThrough(t *testing.T) {
	steady := trickleServer(t, 1024, 100*time.Millisecond, 12) // 10 KiB/s for 1.2 s
	c := newClient(t, HTTPOptions{Timeout: 20 * time.Second, AllowPrivate: true, MinTransferRate: 1024, MinRateWindow: 300 * time.Millisecond})
	if r := c.Fetch(context.Background(), steady); r.Err != nil || len(r.Body) != 12*1024 {
		t.Errorf("steady body: Err %v, %d bytes; want all 12288", r.Err, len(r.Body))
	}
	slow := trickleServer(t, 10, 100*time.Millisecond, 8) // 100 B/s for 0.8 s
	off := newClient(t, HTTPOptions{Timeout: 20 * time.Second, AllowPrivate: true, MinRateWindow: 300 * time.Millisecond})
	if r := off.Fetch(context.Background(), slow); r.Err != nil || len(r.Body) != 80 {
		t.Errorf("floor off: Err %v, %d bytes; want all 80", r.Err, len(r.Body))
	}
}
