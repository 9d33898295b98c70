package fetcher

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/trawlerhq/trawler/internal/hostileweb"
)

// Hostile servers: each case must end in a clear error or a sane response,
// never a panic or a hang, and leave the client able to fetch a normal page.

// okServer is a well-behaved server; stillWorks fetches from it.
func okServer(t *testing.T) string {
	t.Helper()
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>ok</p>")
	}).URL
}

func stillWorks(t *testing.T, c *HTTPClient, okURL, after string) {
	t.Helper()
	r := c.Fetch(context.Background(), okURL)
	if r.Err != nil || r.Status != 200 || string(r.Body) != "<p>ok</p>" || r.ErrKind != "" {
		t.Errorf("after %s: normal fetch got Err %v, Status %d, Body %q, ErrKind %q", after, r.Err, r.Status, r.Body, r.ErrKind)
	}
}

// connServer runs handle on each connection after reading its request. The
// connections are closed when the test ends, so handlers that trickle
// forever stop then.
func connServer(t *testing.T, handle func(conn net.Conn, req *http.Request)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				handle(conn, req)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// trickle writes s one byte every interval until a write fails.
func trickle(conn net.Conn, s string, interval time.Duration) {
	for i := 0; ; i = (i + 1) % len(s) {
		if _, err := conn.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(interval) // the trickle is the hostile behaviour under test
	}
}

func TestHostileSlowHeaders(t *testing.T) {
	ok := okServer(t)
	// Slowloris: the status line, then header bytes one at a time, forever.
	u := connServer(t, func(conn net.Conn, _ *http.Request) {
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"))
		trickle(conn, "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 10*time.Millisecond)
	})
	c := newClient(t, HTTPOptions{Timeout: 3 * time.Second, HeaderTimeout: 200 * time.Millisecond, AllowPrivate: true})
	start := time.Now()
	r := c.Fetch(context.Background(), u)
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("took %v with a 200ms header timeout", elapsed)
	}
	var te *TimeoutError
	if !errors.As(r.Err, &te) || te.Stage != "headers" || r.Err.Error() != "no response headers within 200ms" ||
		!errors.Is(r.Err, ErrTimeout) || r.ErrKind != KindTimeout || r.Status != 0 || r.IP != "127.0.0.1" {
		t.Errorf("Err %v, ErrKind %q, Status %d, IP %q; want no response headers within 200ms", r.Err, r.ErrKind, r.Status, r.IP)
	}
	stillWorks(t, c, ok, "slow headers")
}

// HeaderTimeout also holds over HTTP/2, where the transport's own
// ResponseHeaderTimeout would not apply.
func TestHeaderTimeoutHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>ok</p>")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newClient(t, HTTPOptions{Timeout: 3 * time.Second, HeaderTimeout: 200 * time.Millisecond, AllowPrivate: true})
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c.transport.TLSClientConfig.RootCAs = pool

	stillWorks(t, c, srv.URL, "nothing (warming the HTTP/2 connection)")
	start := time.Now()
	r := c.Fetch(context.Background(), srv.URL+"/slow")
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("took %v", elapsed)
	}
	if r.Err == nil || r.Err.Error() != "no response headers within 200ms" || r.ErrKind != KindTimeout {
		t.Errorf("Err %v, ErrKind %q", r.Err, r.ErrKind)
	}
	stillWorks(t, c, srv.URL, "an HTTP/2 header timeout")
}

func TestHostileSlowBody(t *testing.T) {
	ok := okServer(t)
	u := connServer(t, func(conn net.Conn, _ *http.Request) {
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n"))
		trickle(conn, "<p>slow</p>", 10*time.Millisecond)
	})
	c := newClient(t, HTTPOptions{Timeout: 400 * time.Millisecond, AllowPrivate: true})
	start := time.Now()
	r := c.Fetch(context.Background(), u)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %v with a 400ms timeout", elapsed)
	}
	want := fmt.Sprintf("fetch timed out after 400ms reading the body (%d bytes received) (--fetch-timeout)", len(r.Body))
	var te *TimeoutError
	if r.Err == nil || r.Err.Error() != want || !errors.As(r.Err, &te) || te.Stage != "request" || r.ErrKind != KindTimeout {
		t.Errorf("Err %v, ErrKind %q; want %q", r.Err, r.ErrKind, want)
	}
	if r.Status != 200 || len(r.Body) == 0 || !strings.HasPrefix("<p>slow</p><p>slow</p><p>slow</p>", string(r.Body[:min(len(r.Body), 11)])) {
		t.Errorf("Status %d, Body %q; want the partial body", r.Status, r.Body)
	}
	stillWorks(t, c, ok, "slow body")
}

func TestHostileEndlessBody(t *testing.T) {
	ok := okServer(t)
	chunk := bytes.Repeat([]byte("<p>more</p>"), 1000)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Query().Has("huge-length") {
			w.Header().Set("Content-Length", "1099511627776") // 1 TiB announced
		}
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	const limit = 64 << 10
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, MaxBodyBytes: limit, AllowPrivate: true})
	for _, q := range []string{"", "?huge-length"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		r := c.Fetch(context.Background(), srv.URL+q)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if r.Err != nil || !r.Truncated || len(r.Body) != limit || r.Status != 200 {
			t.Errorf("%q: Err %v, Truncated %v, %d bytes, Status %d; want %d bytes, truncated", q, r.Err, r.Truncated, len(r.Body), r.Status, limit)
		}
		if elapsed > 2*time.Second {
			t.Errorf("%q: took %v", q, elapsed)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Errorf("%q: allocated %d KiB for a %d KiB cap", q, alloc>>10, limit>>10)
		}
		stillWorks(t, c, ok, "endless body"+q)
	}
}

// bombs are 50 MiB of zeros in each coding we accept, built once.
var bombs = map[string]func() []byte{
	"gzip":           func() []byte { return hostileweb.Bomb("gzip") },
	"deflate (zlib)": func() []byte { return hostileweb.Bomb("deflate") },
	"deflate (raw)":  func() []byte { return hostileweb.Bomb("deflate-raw") },
	"br":             func() []byte { return hostileweb.Bomb("br") },
}

func TestHostileCompressionBombs(t *testing.T) {
	ok := okServer(t)
	const limit = 1 << 20
	c := newClient(t, HTTPOptions{Timeout: 10 * time.Second, MaxBodyBytes: limit, AllowPrivate: true})
	for name, bomb := range bombs {
		body := bomb()
		coding, _, _ := strings.Cut(name, " ")
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", coding)
			w.Header().Set("Content-Type", "text/html")
			w.Write(body)
		})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		r := c.Fetch(context.Background(), srv.URL)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)

		if r.Err != nil || !r.Truncated || len(r.Body) != limit || r.Encoding != "" {
			t.Errorf("%s (%d bytes): Err %v, Truncated %v, %d bytes, Encoding %q; want %d decoded bytes, truncated",
				name, len(body), r.Err, r.Truncated, len(r.Body), r.Encoding, limit)
			continue
		}
		if bytes.IndexFunc(r.Body, func(r rune) bool { return r != 0 }) >= 0 {
			t.Errorf("%s: body is not the decompressed zeros", name)
		}
		if elapsed > 3*time.Second {
			t.Errorf("%s: took %v", name, elapsed)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("%s: allocated %d MiB for a %d MiB cap", name, alloc>>20, limit>>20)
		}
		stillWorks(t, c, ok, name+" bomb")
	}
}

func compress(t *testing.T, coding string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "zlib":
		w = zlib.NewWriter(&b)
	case "deflate":
		w, _ = flate.NewWriter(&b, flate.DefaultCompression)
	case "br":
		w = brotli.NewWriter(&b)
	default:
		t.Fatalf("unknown coding %q", coding)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func TestContentEncodings(t *testing.T) {
	ok := okServer(t)
	page := []byte(strings.Repeat("<p>compressible text</p>\n", 200))
	gz := compress(t, "gzip", page)
	twoMembers := append(compress(t, "gzip", page[:100]), compress(t, "gzip", page[100:])...)
	type reply struct {
		encoding string
		body     []byte
	}
	cases := map[string]struct {
		reply
		wantBody     []byte
		wantEncoding string
		wantKind     string // "" for no error
	}{
		"gzip":                    {reply{"gzip", gz}, page, "", ""},
		"x-gzip":                  {reply{"x-gzip", gz}, page, "", ""},
		"upper case":              {reply{"GZIP", gz}, page, "", ""},
		"deflate as zlib":         {reply{"deflate", compress(t, "zlib", page)}, page, "", ""},
		"deflate raw":             {reply{"deflate", compress(t, "deflate", page)}, page, "", ""},
		"br":                      {reply{"br", compress(t, "br", page)}, page, "", ""},
		"identity":                {reply{"identity", page}, page, "", ""},
		"chain gzip then br":      {reply{"gzip, br", compress(t, "br", gz)}, page, "", ""},
		"two gzip members":        {reply{"gzip", twoMembers}, page, "", ""},
		"gzip, trailing junk":     {reply{"gzip", append(append([]byte{}, gz...), "junk\x00\x00"...)}, page, "", ""},
		"empty body with gzip":    {reply{"gzip", nil}, []byte{}, "", ""},
		"unknown coding kept raw": {reply{"zstd", []byte("\x28\xb5\x2f\xfdraw")}, []byte("\x28\xb5\x2f\xfdraw"), "zstd", ""},
		"chain with unknown":      {reply{"gzip, zstd", []byte("raw")}, []byte("raw"), "gzip, zstd", ""},
		"chain too long":          {reply{"gzip, gzip, gzip", []byte("raw")}, []byte("raw"), "gzip, gzip, gzip", ""},
		"corrupt gzip":            {reply{"gzip", []byte("this is not gzip")}, []byte{}, "", KindProtocol},
		"corrupt br":              {reply{"br", []byte("\xff\xff\xff\xffthis is not brotli")}, nil, "", KindProtocol},
		"truncated gzip":          {reply{"gzip", gz[:len(gz)/2]}, nil, "", KindProtocol},
		"corrupt deflate":         {reply{"deflate", []byte("\xff\xff\xff\xff")}, nil, "", KindProtocol},
	}
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	for name, tc := range cases {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", tc.encoding)
			w.Write(tc.body)
		})
		r := c.Fetch(context.Background(), srv.URL)
		if r.ErrKind != tc.wantKind || (r.Err == nil) != (tc.wantKind == "") {
			t.Errorf("%s: Err %v, ErrKind %q; want kind %q", name, r.Err, r.ErrKind, tc.wantKind)
		}
		if tc.wantKind == KindProtocol {
			var de *DecodeError
			if !errors.As(r.Err, &de) || !strings.Contains(r.Err.Error(), "reading the body") {
				t.Errorf("%s: Err = %v, want a DecodeError while reading the body", name, r.Err)
			}
		}
		if tc.wantBody != nil && !bytes.Equal(r.Body, tc.wantBody) {
			t.Errorf("%s: Body %q (%d bytes), want %d bytes", name, r.Body[:min(len(r.Body), 40)], len(r.Body), len(tc.wantBody))
		}
		if r.Encoding != tc.wantEncoding || r.Status != 200 || r.Truncated {
			t.Errorf("%s: Encoding %q, Status %d, Truncated %v; want Encoding %q", name, r.Encoding, r.Status, r.Truncated, tc.wantEncoding)
		}
		if r.Headers["Content-Encoding"] != tc.encoding && tc.encoding != "" {
			t.Errorf("%s: Headers[Content-Encoding] = %q", name, r.Headers["Content-Encoding"])
		}
		stillWorks(t, c, ok, name)
	}
}

// MaxCompressedBytes caps what is read of a compressed body, even when the
// decompressed body stays under MaxBodyBytes (incompressible data).
func TestCompressedCap(t *testing.T) {
	random := make([]byte, 256<<10)
	rand.Read(random)
	gz := compress(t, "gzip", random)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz)
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, MaxBodyBytes: 1 << 20, MaxCompressedBytes: 64 << 10, AllowPrivate: true})
	r := c.Fetch(context.Background(), srv.URL)
	if r.Err != nil || !r.Truncated || len(r.Body) == 0 || len(r.Body) > 64<<10 || !bytes.HasPrefix(random, r.Body) {
		t.Errorf("Err %v, Truncated %v, %d bytes; want a truncated prefix of at most 64 KiB", r.Err, r.Truncated, len(r.Body))
	}

	// A compressed body exactly at the cap is complete.
	c = newClient(t, HTTPOptions{Timeout: 5 * time.Second, MaxCompressedBytes: int64(len(gz)), AllowPrivate: true})
	r = c.Fetch(context.Background(), srv.URL)
	if r.Err != nil || r.Truncated || !bytes.Equal(r.Body, random) {
		t.Errorf("at the cap: Err %v, Truncated %v, %d bytes; want the whole body", r.Err, r.Truncated, len(r.Body))
	}
}

func TestHostileWrongContentLength(t *testing.T) {
	ok := okServer(t)
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})

	// Longer than the body: the server closes after 100 of 1000 bytes.
	longer := connServer(t, func(conn net.Conn, _ *http.Request) {
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n" + strings.Repeat("a", 100)))
	})
	r := c.Fetch(context.Background(), longer)
	if r.Err == nil || r.Err.Error() != "reading the body (100 bytes received): unexpected EOF" || r.ErrKind != KindReset {
		t.Errorf("longer: Err %v, ErrKind %q", r.Err, r.ErrKind)
	}
	if r.Status != 200 || len(r.Body) != 100 || r.Truncated {
		t.Errorf("longer: Status %d, %d bytes, Truncated %v; want the 100 bytes sent", r.Status, len(r.Body), r.Truncated)
	}
	stillWorks(t, c, ok, "a Content-Length longer than the body")

	// Shorter than the body: the announced length is the body. The rest is
	// junk on the connection: net/http drops the connection when it notices,
	// but a request sent at once may reuse it first and read the junk as its
	// response, which fails as "protocol", blamed on the same server.
	shorter := connServer(t, func(conn net.Conn, _ *http.Request) {
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10\r\n\r\n" + strings.Repeat("b", 100)))
		time.Sleep(50 * time.Millisecond) // the junk stays on an open connection a while, as a real server's would
	})
	r = c.Fetch(context.Background(), shorter)
	if r.Err != nil || r.Status != 200 || string(r.Body) != strings.Repeat("b", 10) || r.Truncated {
		t.Errorf("shorter: Err %v, Status %d, Body %q, Truncated %v", r.Err, r.Status, r.Body, r.Truncated)
	}
	r = c.Fetch(context.Background(), shorter)
	if !(r.Err == nil && string(r.Body) == strings.Repeat("b", 10)) && r.ErrKind != KindProtocol {
		t.Errorf("shorter, again: Err %v, ErrKind %q, Body %q; want the same response or a protocol error", r.Err, r.ErrKind, r.Body)
	}
	stillWorks(t, c, ok, "a Content-Length shorter than the body")
}

// Bodies are bytes: no charset is decoded or validated on the way.
func TestHostileCharsets(t *testing.T) {
	ok := okServer(t)
	bodies := map[string][]byte{
		"text/html; charset=utf-8":      []byte("<p>bad \xff\xfe\xc3\x28 utf-8 \xed\xa0\x80</p>"),
		"text/html; charset=iso-8859-1": []byte("<p>caf\xe9 na\xefve \xa9 \xbd</p>"),
		"text/plain; charset=latin1":    {0xe0, 0xe9, 0xf1, 0x00, 0xff},
	}
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	for ct, body := range bodies {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Content-Language", "fr\xe9") // a Latin-1 byte in a header too
			w.Write(body)
		})
		r := c.Fetch(context.Background(), srv.URL)
		if r.Err != nil || !bytes.Equal(r.Body, body) || r.ContentType != ct || r.Skipped != "" {
			t.Errorf("%s: Err %v, Body %q, ContentType %q, Skipped %q; want the bytes verbatim", ct, r.Err, r.Body, r.ContentType, r.Skipped)
		}
		stillWorks(t, c, ok, ct)
	}
}

func TestHostileResetMidBody(t *testing.T) {
	ok := okServer(t)
	u := connServer(t, func(conn net.Conn, _ *http.Request) {
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("a", 100)))
		time.Sleep(50 * time.Millisecond) // the client is reading the body when the reset comes
		conn.(*net.TCPConn).SetLinger(0)  // Close sends RST
		conn.Close()
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	r := c.Fetch(context.Background(), u)
	if r.Err == nil || r.ErrKind != KindReset || !strings.HasPrefix(r.Err.Error(), "reading the body (") {
		t.Errorf("Err %v, ErrKind %q; want a reset while reading the body", r.Err, r.ErrKind)
	}
	if r.Status != 200 || len(r.Body) > 100 {
		t.Errorf("Status %d, %d bytes", r.Status, len(r.Body))
	}
	stillWorks(t, c, ok, "a reset mid-body")
}

func TestHostileRedirectLoop(t *testing.T) {
	ok := okServer(t)
	var hits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	r := c.Fetch(context.Background(), srv.URL+"/loop")
	if r.Err != nil || r.Status != 302 || r.Location != srv.URL+"/loop" || r.Headers["Location"] != "/loop" {
		t.Errorf("Err %v, Status %d, Location %q", r.Err, r.Status, r.Location)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server hit %d times; the redirect must not be followed", n)
	}
	stillWorks(t, c, ok, "a redirect loop")
}

func TestHostileGarbage(t *testing.T) {
	ok := okServer(t)
	noise := make([]byte, 4096)
	rand.Read(noise)
	c := newClient(t, HTTPOptions{Timeout: 2 * time.Second, AllowPrivate: true})
	for name, tc := range map[string]struct {
		reply []byte
		kind  string
	}{
		"random bytes":         {noise, KindProtocol},
		"not HTTP":             {[]byte("SSH-2.0-OpenSSH_9.6\r\n"), KindProtocol},
		"HTTP/0.9 body":        {[]byte("<html><body>hello</body></html>"), KindProtocol},
		"bad status":           {[]byte("HTTP/1.1 abc OK\r\n\r\n"), KindProtocol},
		"header without colon": {[]byte("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"), KindProtocol},
		"NUL in header":        {[]byte("HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 0\r\n\r\n"), KindProtocol},
		"nothing":              {nil, KindReset},
		"status line only":     {[]byte("HTTP/1.1 200 OK\r\n"), KindReset},
		"bad length":           {[]byte("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n"), KindProtocol},
		"two lengths":          {[]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"), KindProtocol},
		"huge headers":         {append([]byte("HTTP/1.1 200 OK\r\nX-Big: "), bytes.Repeat([]byte("a"), 2<<20)...), KindProtocol},
		"bad chunk":            {[]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"), KindProtocol},
		"gzip transfer coding": {[]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello"), KindProtocol},
		"bad gzip":             {[]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello"), KindProtocol},
	} {
		u := connServer(t, func(conn net.Conn, _ *http.Request) { conn.Write(tc.reply) })
		r := c.Fetch(context.Background(), u)
		if (r.Err == nil) != (tc.kind == "") || r.ErrKind != tc.kind {
			t.Errorf("%s: Err %v, ErrKind %q; want kind %q", name, r.Err, r.ErrKind, tc.kind)
		}
		stillWorks(t, c, ok, name)
	}
}

func TestAllowedTypes(t *testing.T) {
	pdf := []byte("%PDF-1.4\n" + strings.Repeat("binary", 100000))
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Has("type") {
			w.Header().Set("Content-Type", q.Get("type"))
		} else {
			w.Header()["Content-Type"] = nil // send none
		}
		if q.Has("status") {
			var status int
			fmt.Sscan(q.Get("status"), &status)
			w.WriteHeader(status)
		}
		body := []byte(q.Get("body"))
		if q.Has("pdf") {
			body = pdf
		}
		w.Write(body)
	})
	for _, tc := range []struct {
		allowed          []string
		query            string
		skipped, sniffed string
		body             string
		status           int
	}{
		{nil, "type=application/pdf&pdf=1", "content type application/pdf not in the allow list", "", "", 200},
		{nil, "type=image/png&status=404", "content type image/png not in the allow list", "", "", 404},
		{nil, "type=TEXT/HTML%3B+charset=UTF-8&body=<p>x</p>", "", "", "<p>x</p>", 200},
		{nil, "type=application/xhtml%2Bxml&body=<p>x</p>", "", "", "<p>x</p>", 200},
		{nil, "type=text/plain&body=plain", "", "", "plain", 200},
		{nil, "pdf=1", "content type application/pdf (sniffed) not in the allow list", "application/pdf", "", 200},
		{nil, "body=<html><p>sniffed</p>", "", "text/html; charset=utf-8", "<html><p>sniffed</p>", 200},
		{nil, "type=nonsense&body=<html><p>sniffed</p>", "", "text/html; charset=utf-8", "<html><p>sniffed</p>", 200},
		{nil, "", "", "text/plain; charset=utf-8", "", 200},
		{nil, "type=application/pdf&status=304", "", "", "", 304},
		{nil, "type=application/pdf&status=204", "", "", "", 204},
		{[]string{"image/*"}, "type=image/png&body=png", "", "", "png", 200},
		{[]string{"image/*"}, "type=text/html&body=png", "content type text/html not in the allow list", "", "", 200},
		{[]string{"*/*"}, "type=application/pdf&body=pdf", "", "", "pdf", 200},
	} {
		c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowedTypes: tc.allowed, AllowPrivate: true})
		r := c.Fetch(context.Background(), srv.URL+"/?"+tc.query)
		if r.Err != nil || r.ErrKind != "" || r.Status != tc.status || r.Skipped != tc.skipped || r.SniffedType != tc.sniffed || string(r.Body) != tc.body {
			t.Errorf("%v %s: Err %v, Status %d, Skipped %q, SniffedType %q, Body %q; want Status %d, Skipped %q, SniffedType %q, Body %q",
				tc.allowed, tc.query, r.Err, r.Status, r.Skipped, r.SniffedType, r.Body, tc.status, tc.skipped, tc.sniffed, tc.body)
		}
		if r.Skipped != "" && r.Headers["Content-Type"] != r.ContentType {
			t.Errorf("%s: skipped without its headers: %v", tc.query, r.Headers)
		}
	}
}

// A skipped body is not downloaded: the server's write of a large body fails.
func TestSkippedBodyNotDownloaded(t *testing.T) {
	done := make(chan error, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		chunk := make([]byte, 64<<10)
		var err error
		for i := 0; i < 1600 && err == nil; i++ { // 100 MiB
			_, err = w.Write(chunk)
		}
		done <- err
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	r := c.Fetch(context.Background(), srv.URL)
	if r.Err != nil || r.Skipped != "content type video/mp4 not in the allow list" || len(r.Body) != 0 {
		t.Fatalf("Err %v, Skipped %q, %d bytes", r.Err, r.Skipped, len(r.Body))
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the server wrote the whole 100 MiB body")
		}
	case <-time.After(3 * time.Second):
		t.Error("the server is still writing")
	}
}

func TestConditionalGet(t *testing.T) {
	const etag, lastMod = `"v42"`, "Mon, 02 Jan 2006 15:04:05 GMT"
	var got []string
	var mu sync.Mutex
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("If-None-Match")+"|"+r.Header.Get("If-Modified-Since"))
		mu.Unlock()
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", lastMod)
		if r.Header.Get("If-None-Match") == etag || r.Header.Get("If-Modified-Since") == lastMod {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>page</p>")
	})
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true})

	first := c.Fetch(context.Background(), srv.URL)
	if first.Err != nil || first.Status != 200 || string(first.Body) != "<p>page</p>" {
		t.Fatalf("first fetch: Err %v, Status %d, Body %q", first.Err, first.Status, first.Body)
	}
	for _, fo := range []FetchOptions{
		{IfNoneMatch: first.Headers["ETag"]},
		{IfModifiedSince: first.Headers["Last-Modified"]},
		{IfNoneMatch: first.Headers["ETag"], IfModifiedSince: first.Headers["Last-Modified"]},
	} {
		r := c.FetchWith(context.Background(), srv.URL, fo)
		if r.Err != nil || r.ErrKind != "" || r.Status != 304 || len(r.Body) != 0 || r.Skipped != "" {
			t.Errorf("%+v: Err %v, Status %d, Body %q, Skipped %q; want a plain 304", fo, r.Err, r.Status, r.Body, r.Skipped)
		}
		if r.Headers["ETag"] != etag || r.Headers["Last-Modified"] != lastMod {
			t.Errorf("%+v: Headers = %v", fo, r.Headers)
		}
	}
	if r := c.FetchWith(context.Background(), srv.URL, FetchOptions{IfNoneMatch: `"old"`}); r.Status != 200 || string(r.Body) != "<p>page</p>" {
		t.Errorf("stale validator: Status %d, Body %q", r.Status, r.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"|", `"v42"|`, "|" + lastMod, `"v42"|` + lastMod, `"old"|`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("validators sent: %q, want %q", got, want)
	}
}

func TestTimeoutDefaults(t *testing.T) {
	for _, tc := range []struct {
		in                          HTTPOptions
		timeout, connect, tls, head time.Duration
	}{
		{HTTPOptions{}, 30 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second},
		{HTTPOptions{Timeout: 6 * time.Second}, 6 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second},
		{HTTPOptions{Timeout: time.Minute}, time.Minute, 10 * time.Second, 10 * time.Second, 20 * time.Second},
		{HTTPOptions{Timeout: time.Second, ConnectTimeout: time.Hour, HeaderTimeout: 500 * time.Millisecond},
			time.Second, time.Second, time.Second, 500 * time.Millisecond},
		{HTTPOptions{ConnectTimeout: 3 * time.Second, TLSHandshakeTimeout: 4 * time.Second},
			30 * time.Second, 3 * time.Second, 4 * time.Second, 10 * time.Second},
		{HTTPOptions{Timeout: 2}, 2, 2, 2, 2}, // too small to divide: Timeout alone
		{HTTPOptions{Timeout: 200 * time.Millisecond}, 200 * time.Millisecond, 67 * time.Millisecond, 67 * time.Millisecond, 67 * time.Millisecond},
	} {
		o := NewHTTPClient(tc.in).Options()
		if o.Timeout != tc.timeout || o.ConnectTimeout != tc.connect || o.TLSHandshakeTimeout != tc.tls || o.HeaderTimeout != tc.head {
			t.Errorf("%+v: Timeout %v, ConnectTimeout %v, TLSHandshakeTimeout %v, HeaderTimeout %v; want %v %v %v %v",
				tc.in, o.Timeout, o.ConnectTimeout, o.TLSHandshakeTimeout, o.HeaderTimeout, tc.timeout, tc.connect, tc.tls, tc.head)
		}
	}
	o := NewHTTPClient(HTTPOptions{MaxBodyBytes: 5000}).Options()
	if o.MaxCompressedBytes != 5000 || fmt.Sprint(o.AllowedTypes) != "[text/html application/xhtml+xml text/plain]" || o.Resolver == nil {
		t.Errorf("MaxCompressedBytes %d, AllowedTypes %v, Resolver %v", o.MaxCompressedBytes, o.AllowedTypes, o.Resolver)
	}
}

// fakeResolver answers from a map; unknown names do not exist.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, host string) ([]netip.Addr, error) {
	ips, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// watchDials records the addresses c's dialer connects to; block makes the
// dial to those addresses hang until its context ends, like a black hole.
func watchDials(c *HTTPClient, block ...string) func() []string {
	var mu sync.Mutex
	var dials []string
	real := c.dialer.dialAddr
	c.dialer.dialAddr = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials = append(dials, addr)
		mu.Unlock()
		host, _, _ := net.SplitHostPort(addr)
		for _, b := range block {
			if host == b {
				<-ctx.Done()
				return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
			}
		}
		return real(ctx, network, addr)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), dials...)
	}
}

func TestResolverHook(t *testing.T) {
	var host atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		host.Store(r.Host)
		fmt.Fprint(w, "hi")
	})
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := fakeResolver{
		"site.test":      {"127.0.0.1"},
		"second.test":    {"::1", "127.0.0.1"},       // nothing listens on [::1]:port
		"blackhole.test": {"192.0.2.1", "127.0.0.1"}, // the first never answers
		"mapped.test":    {"::ffff:127.0.0.1"},
		"empty.test":     {},
	}
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, ConnectTimeout: time.Second, Resolver: res, AllowPrivate: true})
	c.dialer.minAttempt = 100 * time.Millisecond
	dials := watchDials(c, "192.0.2.1")

	for _, tc := range []struct{ name, dialed string }{
		{"site.test", "127.0.0.1"},
		{"second.test", "[::1] 127.0.0.1"},
		{"blackhole.test", "192.0.2.1 127.0.0.1"},
		{"mapped.test", "127.0.0.1"},
	} {
		before := len(dials())
		c.CloseIdleConnections()
		start := time.Now()
		r := c.Fetch(context.Background(), "http://"+tc.name+":"+port+"/")
		if r.Err != nil || string(r.Body) != "hi" || r.IP != "127.0.0.1" || host.Load() != tc.name+":"+port {
			t.Errorf("%s: Err %v, Body %q, IP %q, Host %v", tc.name, r.Err, r.Body, r.IP, host.Load())
		}
		var got []string
		for _, d := range dials()[before:] {
			h, _, _ := net.SplitHostPort(d)
			if strings.Contains(h, ":") {
				h = "[" + h + "]"
			}
			got = append(got, h)
		}
		if strings.Join(got, " ") != tc.dialed {
			t.Errorf("%s: dialed %v, want %s", tc.name, got, tc.dialed)
		}
		if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
			t.Errorf("%s: took %v: one address ate the connect timeout", tc.name, elapsed)
		}
	}

	for _, name := range []string{"missing.test", "empty.test"} {
		r := c.Fetch(context.Background(), "http://"+name+"/")
		var dnsErr *net.DNSError
		if !errors.As(r.Err, &dnsErr) || r.ErrKind != KindDNS || r.IP != "" {
			t.Errorf("%s: Err %v, ErrKind %q, IP %q; want a DNS error", name, r.Err, r.ErrKind, r.IP)
		}
	}

	// A resolver's own error type is kept inside a DNSError.
	boom := errors.New("resolver exploded")
	c2 := newClient(t, HTTPOptions{Timeout: 5 * time.Second, Resolver: errResolver{boom}, AllowPrivate: true})
	r := c2.Fetch(context.Background(), "http://site.test/")
	if !errors.Is(r.Err, boom) || r.ErrKind != KindDNS {
		t.Errorf("Err %v, ErrKind %q; want the resolver's error, kind dns", r.Err, r.ErrKind)
	}
}

type errResolver struct{ err error }

func (e errResolver) LookupNetIP(context.Context, string) ([]netip.Addr, error) { return nil, e.err }

// slowResolver never answers before its context ends.
type slowResolver struct{}

func (slowResolver) LookupNetIP(ctx context.Context, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestConnectTimeout(t *testing.T) {
	ok := okServer(t)
	c := newClient(t, HTTPOptions{Timeout: 3 * time.Second, ConnectTimeout: 200 * time.Millisecond,
		Resolver: fakeResolver{"hole.test": {"192.0.2.1", "192.0.2.2"}}, AllowPrivate: true})
	c.dialer.minAttempt = 50 * time.Millisecond
	dials := watchDials(c, "192.0.2.1", "192.0.2.2")
	start := time.Now()
	r := c.Fetch(context.Background(), "http://hole.test/")
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("took %v with a 200ms connect timeout", elapsed)
	}
	var te *TimeoutError
	if !errors.As(r.Err, &te) || te.Stage != "connect" || r.Err.Error() != "no connection to hole.test:80 within 200ms" || r.ErrKind != KindTimeout {
		t.Errorf("Err %v, ErrKind %q", r.Err, r.ErrKind)
	}
	if d := dials(); len(d) != 2 {
		t.Errorf("dialed %v; want both addresses tried", d)
	}
	stillWorks(t, c, ok, "a connect timeout")

	// Resolving counts against ConnectTimeout too.
	c = newClient(t, HTTPOptions{Timeout: 3 * time.Second, ConnectTimeout: 200 * time.Millisecond, Resolver: slowResolver{}, AllowPrivate: true})
	r = c.Fetch(context.Background(), "http://slow-dns.test/")
	if r.Err == nil || r.Err.Error() != "no connection to slow-dns.test:80 within 200ms" || r.ErrKind != KindTimeout {
		t.Errorf("slow DNS: Err %v, ErrKind %q", r.Err, r.ErrKind)
	}

	// With ConnectTimeout equal to Timeout, whichever ends first is reported,
	// by the stage it interrupted.
	c = newClient(t, HTTPOptions{Timeout: 200 * time.Millisecond, ConnectTimeout: time.Hour, Resolver: slowResolver{}, AllowPrivate: true})
	r = c.Fetch(context.Background(), "http://slow-dns.test/")
	if r.Err == nil || (r.Err.Error() != "fetch timed out after 200ms resolving the host name (--fetch-timeout)" &&
		r.Err.Error() != "no connection to slow-dns.test:80 within 200ms") || r.ErrKind != KindTimeout {
		t.Errorf("slow DNS, whole timeout: Err %v, ErrKind %q", r.Err, r.ErrKind)
	}
}

func TestTLSHandshakeTimeout(t *testing.T) {
	// Accepts TCP, never speaks TLS.
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
			go func() { defer conn.Close(); io.Copy(io.Discard, conn) }()
		}
	}()
	c := newClient(t, HTTPOptions{Timeout: 3 * time.Second, TLSHandshakeTimeout: 200 * time.Millisecond, AllowPrivate: true})
	start := time.Now()
	r := c.Fetch(context.Background(), "https://"+ln.Addr().String()+"/")
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("took %v with a 200ms TLS handshake timeout", elapsed)
	}
	var te *TimeoutError
	if !errors.As(r.Err, &te) || te.Stage != "tls" || r.Err.Error() != "TLS handshake not finished within 200ms" || r.ErrKind != KindTimeout {
		t.Errorf("Err %v, ErrKind %q", r.Err, r.ErrKind)
	}
}

func TestErrKinds(t *testing.T) {
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failure is the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plain := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()

	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, AllowPrivate: true,
		Resolver: fakeResolver{"tls.test": {"127.0.0.1"}}})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		url  string
		kind string
	}{
		{context.Background(), plain.URL, ""},
		{context.Background(), "http://" + closedAddr + "/", KindRefused},
		{context.Background(), tlsSrv.URL, KindTLS},                                                  // untrusted certificate
		{context.Background(), "https://" + strings.TrimPrefix(plain.URL, "http://") + "/", KindTLS}, // not TLS
		{context.Background(), "http://nowhere.test/", KindDNS},
		{canceled, plain.URL, KindCanceled},
		{context.Background(), "ftp://example.com/", KindOther},
	} {
		r := c.Fetch(tc.ctx, tc.url)
		if r.ErrKind != tc.kind || (r.Err == nil) != (tc.kind == "") {
			t.Errorf("%s: Err %v, ErrKind %q; want %q", tc.url, r.Err, r.ErrKind, tc.kind)
		}
	}
}

// With AllowPrivate false, a non-public address is refused before any
// connection is attempted, whether it is literal or what a name resolves to.
func TestSSRFRefused(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, Resolver: fakeResolver{
		"intranet.test":  {"10.1.2.3"},
		"mapped.test":    {"::ffff:10.1.2.3"},
		"rebind.test":    {"127.0.0.1", "169.254.169.254"},
		"metadata.test":  {"fd00:ec2::254"},
		"localhost.test": {"::1", "127.0.0.1"},
	}})
	dials := neverDial(c) // even a broken guard could not connect
	for _, tc := range []struct{ url, addr, reason string }{
		{"http://127.0.0.1:" + port + "/", "127.0.0.1", "loopback"},
		{"http://10.0.0.1/", "10.0.0.1", "private"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "cloud metadata"},
		{"http://[::1]:" + port + "/", "::1", "loopback"},
		{"http://[fe80::1%25eth0]/", "fe80::1%eth0", "link-local"},
		{"http://100.64.1.1/", "100.64.1.1", "carrier-grade NAT"},
		{"http://0.0.0.0:" + port + "/", "0.0.0.0", "unspecified"},
		{"http://intranet.test/", "10.1.2.3", "private"},
		{"http://mapped.test/", "10.1.2.3", "private"},
		{"http://rebind.test:" + port + "/", "127.0.0.1", "loopback"},
		{"http://metadata.test/", "fd00:ec2::254", "cloud metadata"},
		{"http://localhost.test:" + port + "/", "::1", "loopback"},
	} {
		start := time.Now()
		r := c.Fetch(context.Background(), tc.url)
		var blocked *BlockedAddressError
		if !errors.As(r.Err, &blocked) || blocked.Addr.String() != tc.addr || blocked.Reason != tc.reason || r.ErrKind != KindBlocked {
			t.Errorf("%s: Err %v, ErrKind %q; want %s blocked as %s", tc.url, r.Err, r.ErrKind, tc.addr, tc.reason)
		}
		if r.Status != 0 || r.IP != "" {
			t.Errorf("%s: Status %d, IP %q", tc.url, r.Status, r.IP)
		}
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("%s: took %v", tc.url, elapsed)
		}
	}
	if d := dials(); len(d) != 0 {
		t.Errorf("connections attempted: %v", d)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server reached %d times", n)
	}
}

// Of a name's addresses, only the public ones are tried.
func TestSSRFMixedAddresses(t *testing.T) {
	c := newClient(t, HTTPOptions{Timeout: 5 * time.Second, Resolver: fakeResolver{
		"mixed.test": {"10.1.2.3", "93.184.215.14", "127.0.0.1"},
	}})
	refused := errors.New("test: no route")
	var dialed []string
	c.dialer.dialAddr = func(_ context.Context, _, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: refused}
	}
	r := c.Fetch(context.Background(), "http://mixed.test/")
	if !errors.Is(r.Err, refused) || fmt.Sprint(dialed) != "[93.184.215.14:80]" {
		t.Errorf("Err %v, dialed %v; want only the public address tried", r.Err, dialed)
	}
}

// The page schema (docs/schema, the public contract) lists the same error
// kinds as the fetcher can write.
func TestErrKindsMatchPageSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", "page.v1.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			ErrorKind struct {
				Enum []string `json:"enum"`
			} `json:"error_kind"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Properties.ErrorKind.Enum; !slices.Equal(got, ErrKinds) {
		t.Fatalf("schema error_kind enum %v, fetcher ErrKinds %v", got, ErrKinds)
	}
}
