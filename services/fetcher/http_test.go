package fetcher

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/hostileweb"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// newClient returns a client that may reach the tests' 127.0.0.1 servers
// unless o says otherwise.
func newClient(t testing.TB, o HTTPOptions) *HTTPClient {
	t.Helper()
	c := NewHTTPClient(o)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchOK(t *testing.T) {
	var gotUA, gotAccept, gotAE string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotAccept, gotAE = r.UserAgent(), r.Header.Get("Accept"), r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		w.Header().Set("Set-Cookie", "session=secret")
		w.Header().Set("Link", strings.Repeat("x", 5000))
		fmt.Fprint(w, "<html>hello</html>")
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true, UserAgent: "TestBot/1 (+https://example.com)"})

	r := c.Fetch(context.Background(), srv.URL+"/page")
	if r.Err != nil {
		t.Fatalf("Err = %v", r.Err)
	}
	if r.Status != 200 || string(r.Body) != "<html>hello</html>" || r.Truncated {
		t.Errorf("Status %d, Body %q, Truncated %v", r.Status, r.Body, r.Truncated)
	}
	if r.ContentType != "text/html; charset=utf-8" {
		t.Errorf("ContentType = %q", r.ContentType)
	}
	if r.Headers["ETag"] != `"v1"` || r.Headers["Last-Modified"] == "" || r.Headers["Content-Length"] != "18" {
		t.Errorf("Headers = %v", r.Headers)
	}
	if _, ok := r.Headers["Set-Cookie"]; ok {
		t.Errorf("Headers kept Set-Cookie: %v", r.Headers)
	}
	if n := len(r.Headers["Link"]); n != maxHeaderValue {
		t.Errorf("Link header kept %d bytes, want %d", n, maxHeaderValue)
	}
	if r.Location != "" {
		t.Errorf("Location = %q, want none", r.Location)
	}
	if r.IP != "127.0.0.1" {
		t.Errorf("IP = %q, want 127.0.0.1", r.IP)
	}
	if r.Duration <= 0 {
		t.Errorf("Duration = %v", r.Duration)
	}
	if gotUA != "TestBot/1 (+https://example.com)" || gotAccept != acceptHeader || gotAE != "gzip, deflate, br" {
		t.Errorf("request headers: User-Agent %q, Accept %q, Accept-Encoding %q", gotUA, gotAccept, gotAE)
	}
}

func TestFetchDefaultUserAgent(t *testing.T) {
	var gotUA string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { gotUA = r.UserAgent() })
	r := newClient(t, HTTPOptions{AllowPrivate: true}).Fetch(context.Background(), srv.URL)
	if r.Err != nil || !strings.HasPrefix(gotUA, "Trawler/") {
		t.Errorf("Err %v, User-Agent %q", r.Err, gotUA)
	}
}

func TestFetchReusesConnections(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		fmt.Fprint(w, "ok")
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	for i := 0; i < 3; i++ {
		if r := c.Fetch(context.Background(), srv.URL); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(remotes) != 1 {
		t.Errorf("3 fetches used %d connections, want 1 kept alive", len(remotes))
	}
}

func TestFetchNotFound(t *testing.T) {
	srv := serve(t, http.NotFound)
	r := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true}).Fetch(context.Background(), srv.URL+"/missing")
	if r.Err != nil || r.Status != 404 || !strings.Contains(string(r.Body), "not found") {
		t.Errorf("Err %v, Status %d, Body %q", r.Err, r.Status, r.Body)
	}
}

func TestFetchRedirectNotFollowed(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/old/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(http.StatusMovedPermanently)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	srv := serve(t, mux.ServeHTTP)
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})

	for _, tc := range []struct{ to, want string }{
		{"/new/path?q=1", srv.URL + "/new/path?q=1"},
		{"sibling", srv.URL + "/old/sibling"},
		{"../up", srv.URL + "/up"},
		{"https://example.com/x", "https://example.com/x"},
		{"//cdn.example.com/y", "http://cdn.example.com/y"},
	} {
		r := c.Fetch(context.Background(), srv.URL+"/old/page?to="+tc.to)
		if r.Err != nil || r.Status != 301 {
			t.Errorf("to %q: Err %v, Status %d", tc.to, r.Err, r.Status)
		}
		if r.Location != tc.want {
			t.Errorf("to %q: Location = %q, want %q", tc.to, r.Location, tc.want)
		}
		if r.Headers["Location"] != tc.to {
			t.Errorf("to %q: Headers[Location] = %q, want the raw value", tc.to, r.Headers["Location"])
		}
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("redirect followed %d times", n)
	}
}

// A server that never answers is reported by the first limit to run out:
// HeaderTimeout (by default a third of Timeout), or Timeout when HeaderTimeout
// is not below it.
func TestFetchTimeoutWaitingForResponse(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	for _, tc := range []struct {
		header time.Duration
		want   string
		stage  string
	}{
		{0, "no response headers within 67ms", "headers"},
		{100 * time.Millisecond, "no response headers within 100ms", "headers"},
		{200 * time.Millisecond, "fetch timed out after 200ms waiting for the response headers (--fetch-timeout)", "request"},
		{time.Hour, "fetch timed out after 200ms waiting for the response headers (--fetch-timeout)", "request"},
	} {
		c := newClient(t, HTTPOptions{Timeout: 200 * time.Millisecond, HeaderTimeout: tc.header, AllowPrivate: true})
		start := time.Now()
		r := c.Fetch(context.Background(), srv.URL)
		if elapsed := time.Since(start); elapsed > 2*time.Second {
			t.Errorf("HeaderTimeout %v: took %v with a 200ms timeout", tc.header, elapsed)
		}
		var te *TimeoutError
		if !errors.Is(r.Err, ErrTimeout) || !errors.As(r.Err, &te) || r.Status != 0 || r.ErrKind != KindTimeout {
			t.Fatalf("HeaderTimeout %v: Err %v, Status %d, ErrKind %q; want a timeout, no status", tc.header, r.Err, r.Status, r.ErrKind)
		}
		if r.Err.Error() != tc.want || te.Stage != tc.stage {
			t.Errorf("HeaderTimeout %v: Err = %q (stage %s), want %q (stage %s)", tc.header, r.Err, te.Stage, tc.want, tc.stage)
		}
		if r.IP != "127.0.0.1" {
			t.Errorf("HeaderTimeout %v: IP = %q: the connection was made", tc.header, r.IP)
		}
	}
}

// A server dripping its body byte by byte must not hold a fetch past Timeout.
func TestFetchTimeoutReadingBody(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
	c := newClient(t, HTTPOptions{Timeout: 300 * time.Millisecond, AllowPrivate: true})

	start := time.Now()
	r := c.Fetch(context.Background(), srv.URL)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %v with a 300ms timeout", elapsed)
	}
	if !errors.Is(r.Err, ErrTimeout) || !strings.Contains(r.Err.Error(), "reading the body") || r.ErrKind != KindTimeout {
		t.Fatalf("Err = %v (ErrKind %q), want a timeout while reading the body", r.Err, r.ErrKind)
	}
	if r.Status != 200 || len(r.Body) == 0 {
		t.Errorf("Status %d, %d body bytes; want the partial response kept", r.Status, len(r.Body))
	}
}

func TestFetchCanceledByCaller(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	r := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true}).Fetch(ctx, srv.URL)
	if r.Err == nil || errors.Is(r.Err, ErrTimeout) || !errors.Is(r.Err, context.Canceled) || r.ErrKind != KindCanceled {
		t.Errorf("Err = %v (ErrKind %q), want canceled, not a timeout", r.Err, r.ErrKind)
	}
}

func TestFetchBodyCap(t *testing.T) {
	const limit = 4096
	body := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", fmt.Sprint(n))
		}
		w.Write(body[:n])
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, MaxBodyBytes: limit, AllowPrivate: true})

	for _, tc := range []struct {
		n         int
		truncated bool
	}{{0, false}, {limit - 1, false}, {limit, false}, {limit + 1, true}, {len(body), true}} {
		for _, chunked := range []string{"", "1"} {
			r := c.Fetch(context.Background(), fmt.Sprintf("%s/?n=%d&chunked=%s", srv.URL, tc.n, chunked))
			want := body[:min(tc.n, limit)]
			if r.Err != nil || r.Truncated != tc.truncated || !bytes.Equal(r.Body, want) {
				t.Errorf("n=%d chunked=%q: Err %v, Truncated %v, %d bytes; want Truncated %v, %d bytes",
					tc.n, chunked, r.Err, r.Truncated, len(r.Body), tc.truncated, len(want))
			}
		}
	}
}

func TestFetchGzipBomb(t *testing.T) {
	bomb := hostileweb.Bomb("gzip") // 50 MiB of zeros in about 65 KB
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/html")
		w.Write(bomb)
	})
	const limit = 1 << 20
	c := newClient(t, HTTPOptions{Timeout: 10 * time.Second, MaxBodyBytes: limit, AllowPrivate: true})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	r := c.Fetch(context.Background(), srv.URL)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	if r.Err != nil || !r.Truncated || len(r.Body) != limit {
		t.Fatalf("Err %v, Truncated %v, %d bytes; want %d bytes, truncated", r.Err, r.Truncated, len(r.Body), limit)
	}
	if r.Body[0] != 0 || r.Body[limit-1] != 0 {
		t.Error("body is not the decompressed zeros")
	}
	if elapsed > 3*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d MiB for a %d MiB cap", alloc>>20, limit>>20)
	}
}

func TestFetchBlocksLoopback(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second})
	dials := neverDial(c) // even a broken guard could not connect

	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/"} {
		r := c.Fetch(context.Background(), u)
		var blocked *BlockedAddressError
		if !errors.As(r.Err, &blocked) || blocked.Reason != "loopback" || r.ErrKind != KindBlocked {
			t.Fatalf("%s: Err = %v (ErrKind %q), want a blocked loopback address", u, r.Err, r.ErrKind)
		}
		if !strings.HasPrefix(r.Err.Error(), "blocked address ") ||
			!strings.HasSuffix(r.Err.Error(), " (loopback); pass --allow-private to permit") {
			t.Errorf("%s: Err = %q", u, r.Err)
		}
		if r.Status != 0 || r.IP != "" {
			t.Errorf("%s: Status %d, IP %q", u, r.Status, r.IP)
		}
	}
	if r := c.Fetch(context.Background(), srv.URL); r.Err.Error() != "blocked address 127.0.0.1 (loopback); pass --allow-private to permit" {
		t.Errorf("Err = %q", r.Err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server was reached %d times", n)
	}
	if d := dials(); len(d) != 0 {
		t.Errorf("dialed %v", d)
	}
}

// neverDial replaces c's dialer with a recorder that never connects, so a
// test of refused addresses cannot reach them even if the guard were broken.
func neverDial(c *HTTPClient) func() []string {
	var mu sync.Mutex
	var dials []string
	c.dialer.dialAddr = func(_ context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials = append(dials, addr)
		mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("the test's recorder never connects")}
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), dials...)
	}
}

// Issue 19 #4: metadata and link-local addresses stay refused under
// --allow-private; only --allow-link-local on top opens them. No dial is
// ever attempted for a refused address.
func TestFetchRefusesMetadataWithoutDialing(t *testing.T) {
	for _, tt := range []struct {
		o    HTTPOptions
		url  string
		want string
	}{
		{HTTPOptions{}, "http://169.254.169.254/latest/meta-data/", "blocked address 169.254.169.254 (cloud metadata); pass --allow-private --allow-link-local to permit"},
		{HTTPOptions{AllowPrivate: true}, "http://169.254.169.254/latest/meta-data/", "blocked address 169.254.169.254 (cloud metadata); pass --allow-private --allow-link-local to permit"},
		{HTTPOptions{AllowPrivate: true}, "http://[fd00:ec2::254]/", "blocked address fd00:ec2::254 (cloud metadata); pass --allow-private --allow-link-local to permit"},
		{HTTPOptions{AllowPrivate: true}, "http://[fe80::1]/", "blocked address fe80::1 (link-local); pass --allow-private --allow-link-local to permit"},
		{HTTPOptions{AllowPrivate: true}, "http://[64:ff9b::a9fe:a9fe]/", "blocked address 64:ff9b::a9fe:a9fe (cloud metadata (169.254.169.254 in NAT64)); pass --allow-private --allow-link-local to permit"},
		{HTTPOptions{}, "http://10.1.2.3/", "blocked address 10.1.2.3 (private); pass --allow-private to permit"},
		{HTTPOptions{AllowPrivate: true, AllowLinkLocal: true}, "http://224.0.0.1/", "blocked address 224.0.0.1 (multicast): never fetched"},
	} {
		c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: tt.o.AllowPrivate, AllowLinkLocal: tt.o.AllowLinkLocal})
		dials := neverDial(c)
		r := c.Fetch(context.Background(), tt.url)
		var blocked *BlockedAddressError
		if !errors.As(r.Err, &blocked) || r.Err.Error() != tt.want || r.ErrKind != KindBlocked {
			t.Errorf("%s with %+v: Err = %v (kind %q), want %q", tt.url, tt.o, r.Err, r.ErrKind, tt.want)
		}
		if d := dials(); len(d) != 0 {
			t.Errorf("%s: dialed %v", tt.url, d)
		}
	}
	// With both flags the metadata address is dialed (through the recorder).
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true, AllowLinkLocal: true})
	dials := neverDial(c)
	c.Fetch(context.Background(), "http://169.254.169.254/")
	if d := dials(); len(d) != 1 || d[0] != "169.254.169.254:80" {
		t.Errorf("with --allow-link-local: dials %v", d)
	}
}

func TestGuardControl(t *testing.T) {
	g := guard{}
	if err := g.control("tcp4", "93.184.215.14:443", nil); err != nil {
		t.Errorf("public address refused: %v", err)
	}
	if err := g.control("tcp4", "not-an-address", nil); err == nil {
		t.Error("unparseable address accepted")
	}
	err := g.control("tcp6", "[::ffff:10.1.2.3]:80", nil)
	if err == nil || err.Error() != "blocked address 10.1.2.3 (private); pass --allow-private to permit" {
		t.Errorf("mapped private address: %v", err)
	}
}

func TestFetchInvalidURL(t *testing.T) {
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second})
	for _, u := range []string{"", "::not a url", "ftp://example.com/", "mailto:a@example.com", "/relative/path", "http://", "http:///path", "http://exa mple.com/", "http://[::1/"} {
		r := c.Fetch(context.Background(), u)
		if r.Err == nil || !strings.HasPrefix(r.Err.Error(), "invalid URL") || r.ErrKind != KindOther {
			t.Errorf("%q: Err = %v (ErrKind %q), want invalid URL", u, r.Err, r.ErrKind)
		}
	}
}

func TestFetchConnectionRefused(t *testing.T) {
	addr := testutil.ClosedAddr(t)

	r := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true}).Fetch(context.Background(), "http://"+addr+"/")
	if r.Err == nil || !strings.Contains(r.Err.Error(), "connection refused") || r.Status != 0 || r.ErrKind != KindRefused {
		t.Errorf("Err %v, Status %d, ErrKind %q; want connection refused", r.Err, r.Status, r.ErrKind)
	}
	if strings.Contains(r.Err.Error(), "Get ") {
		t.Errorf("Err = %q repeats the request", r.Err)
	}
}

func TestFetchServerClosesMidBody(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", "1000")
		}
		w.Write(bytes.Repeat([]byte("a"), 100))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drops the connection, unlogged
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	for _, u := range []string{srv.URL, srv.URL + "?chunked=1"} {
		r := c.Fetch(context.Background(), u)
		if r.Err == nil || !strings.Contains(r.Err.Error(), "reading the body (100 bytes received)") || r.ErrKind != KindReset {
			t.Errorf("%s: Err = %v (ErrKind %q), want a failed body read", u, r.Err, r.ErrKind)
		}
		if r.Status != 200 || len(r.Body) != 100 || r.Truncated {
			t.Errorf("%s: Status %d, %d bytes, Truncated %v; want the partial body", u, r.Status, len(r.Body), r.Truncated)
		}
	}
}

// rawServer answers every connection with reply, whatever it asked.
func rawServer(t *testing.T, reply []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				conn.Read(make([]byte, 4096))
				conn.Write(reply)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

func TestFetchGarbageFromServer(t *testing.T) {
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	for name, reply := range map[string][]byte{
		"not HTTP":          []byte("SSH-2.0-OpenSSH_9.6\r\n"),
		"bad status":        []byte("HTTP/1.1 abc OK\r\n\r\n"),
		"nothing":           nil,
		"bad length":        []byte("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n"),
		"huge headers":      append([]byte("HTTP/1.1 200 OK\r\nX-Big: "), bytes.Repeat([]byte("a"), 2<<20)...),
		"bad chunk":         []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"),
		"bad gzip":          []byte("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello"),
		"bad redirect":      []byte("HTTP/1.1 302 Found\r\nLocation: http://[::1\r\nContent-Length: 0\r\n\r\n"),
		"redirect no place": []byte("HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n"),
	} {
		r := c.Fetch(context.Background(), rawServer(t, reply))
		switch name {
		case "bad redirect", "redirect no place":
			if r.Err != nil || r.Status != 302 || r.Location != "" {
				t.Errorf("%s: Err %v, Status %d, Location %q; want 302 without a target", name, r.Err, r.Status, r.Location)
			}
		default:
			if r.Err == nil {
				t.Errorf("%s: no error; Status %d, Body %q", name, r.Status, r.Body)
			}
		}
	}
}

func TestFetchHTTPS(t *testing.T) {
	var proto atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(int32(r.ProtoMajor))
		fmt.Fprint(w, "secure")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c.transport.TLSClientConfig.RootCAs = pool

	r := c.Fetch(context.Background(), srv.URL)
	if r.Err != nil || string(r.Body) != "secure" || r.IP != "127.0.0.1" {
		t.Fatalf("Err %v, Body %q, IP %q", r.Err, r.Body, r.IP)
	}
	if p := proto.Load(); p != 2 {
		t.Errorf("spoke HTTP/%d, want HTTP/2", p)
	}
}

// A sitemap request takes XML and gzip bodies that the allow list refuses
// for pages; a page request still refuses them.
func TestFetchSitemapTypes(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("type"))
		w.Write([]byte("<urlset/>"))
	})
	c := newClient(t, HTTPOptions{AllowPrivate: true})
	for _, typ := range []string{"application/xml", "text/xml; charset=utf-8", "application/gzip", "application/x-gzip"} {
		u := srv.URL + "/?type=" + url.QueryEscape(typ)
		if r := c.FetchWith(context.Background(), u, FetchOptions{Sitemap: true}); r.Skipped != "" || string(r.Body) != "<urlset/>" {
			t.Errorf("sitemap as %s: skipped %q, body %q", typ, r.Skipped, r.Body)
		}
		if r := c.Fetch(context.Background(), u); r.Skipped == "" {
			t.Errorf("page as %s: taken, want skipped", typ)
		}
	}
	u := srv.URL + "/?type=application/pdf"
	if r := c.FetchWith(context.Background(), u, FetchOptions{Sitemap: true}); r.Skipped == "" {
		t.Error("a PDF for a sitemap: taken, want skipped")
	}
}
