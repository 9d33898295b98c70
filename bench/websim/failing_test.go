package websim

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// A share of the hosts fail, half down and half hanging, never the seed's;
// the truth leaves their URLs out, and the audit counts a page request of
// a hanging host apart. A down host refuses connections; a hanging one
// accepts and answers nothing until the client gives up.
func TestFailingHosts(t *testing.T) {
	w, err := New(Config{Seed: 5, Hosts: 40, Pages: 20, Block: 41, Failing: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	down, hang := -1, -1
	var failing int
	for h := range 40 {
		switch w.Failing(h) {
		case Down:
			down = max(down, h)
			failing++
		case Hang:
			hang = max(hang, h)
			failing++
		}
	}
	if w.Failing(0) != Healthy || failing < 6 || failing > 10 || down < 0 || hang < 0 {
		t.Fatalf("%d failing hosts of 40 (down up to %d, hanging up to %d), the seed's %v; want about 8 of each kind, the seed's healthy", failing, down, hang, w.Failing(0))
	}
	truth := w.Truth()
	for u := range truth.URLs {
		if h, _, _ := w.split(u); w.Failing(h) != Healthy {
			t.Fatalf("%s of a failing host in the truth", u)
		}
	}
	if truth.OnFailing == 0 || truth.FailingHosts == 0 {
		t.Fatalf("no links to failing hosts: %+v", truth)
	}

	s, err := Serve(w)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := net.DialTimeout("tcp", w.Addr(down), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dialing a down host: %v, want connection refused", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+w.Addr(hang)+"/p/1", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a hanging host answered %s", resp.Status)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a hanging host: %v, want the client's deadline", err)
	}
	// The handler sees the client go and logs the request.
	var a Audit
	for range 100 {
		if a = w.Judge(truth, s.Log(), nil, 0); a.ToFailing == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if a.ToFailing != 1 || a.Unknown != 0 {
		t.Errorf("audit: %d requests of a hanging host's pages, %d unknown; want 1 and 0", a.ToFailing, a.Unknown)
	}
}
