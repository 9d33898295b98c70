package hostileweb

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testutil"
)

// The ground truth holds together: every ordinary page is reachable from
// the seed through ordinary pages, every case an ordinary page links to
// is linked, and so is every trap entrance; the DNS server denies the
// unresolvable name; Close ends every server, trickling ones included.
func TestGroundTruth(t *testing.T) {
	w, err := Start(Options{IP: "127.0.19.1", Pages: 30, MaxBody: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	href := regexp.MustCompile(`href="([^"]+)"`)
	linked := map[string]bool{}
	seen := map[string]bool{w.Seed: true}
	todo := []string{w.Seed}
	c := &http.Client{Timeout: 5 * time.Second}
	for len(todo) > 0 {
		u := todo[0]
		todo = todo[1:]
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("ordinary page %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "<title>") {
			t.Fatalf("ordinary page %s: status %d, body %q", u, resp.StatusCode, body)
		}
		for _, m := range href.FindAllStringSubmatch(string(body), -1) {
			l := m[1]
			linked[l] = true
			if slices.Contains(w.Ordinary, l) && !seen[l] {
				seen[l] = true
				todo = append(todo, l)
			}
		}
	}
	if len(seen) != len(w.Ordinary) {
		var missing []string
		for _, u := range w.Ordinary {
			if !seen[u] {
				missing = append(missing, u)
			}
		}
		t.Errorf("ordinary pages not reachable through ordinary pages: %v", missing)
	}
	entrances := 0
	for _, cs := range w.Cases {
		if linked[cs.URL] {
			entrances++
		}
	}
	if entrances < 30 {
		t.Errorf("only %d of %d cases are linked from ordinary pages", entrances, len(w.Cases))
	}
	for _, tr := range w.Traps {
		if !linked[tr.Entrance] {
			t.Errorf("trap %q: entrance %s not linked", tr.Class, tr.Entrance)
		}
	}
	if !linked["http://"+w.Unresolvable+"/page.html"] {
		t.Errorf("the unresolvable host is not linked")
	}

	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", w.DNS)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = r.LookupHost(ctx, w.Unresolvable)
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("lookup %s: %v, want NXDOMAIN", w.Unresolvable, err)
	}

	// A trickling server holds its connection until Close.
	slow := w.Hosts["slow-headers"] + "/slow-headers"
	go c.Get(slow)
	testutil.Eventually(t, 5*time.Second, "the trickling request", func() bool { return w.Requests()[slow] > 0 })
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a trickling connection open")
	}
}

func TestRepeatingPaths(t *testing.T) {
	// {}, a, b, aa, ab, ba, bb, then the 3- and 4-sequences with at most
	// two of each: 6 + 6.
	if got := repeatingPaths(2, 19); got != 19 {
		t.Errorf("repeatingPaths(2, 19) = %d, want 19", got)
	}
	if got := repeatingPaths(2, 2); got != 7 {
		t.Errorf("repeatingPaths(2, 2) = %d, want 7", got)
	}
}
