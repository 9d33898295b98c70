package hostileweb

// The raw-TCP cases: servers net/http cannot make misbehave, one address
// each.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// rawCases are the servers net/http cannot make misbehave: one address
// each, answering over raw TCP.
func (w *Web) rawCases(link func(string, string, Want), okPage func(string) string, ordinary func(string)) error {
	page := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
	for _, c := range []struct {
		name, class, path string
		want              Want
		handle            func(net.Conn, *http.Request)
	}{
		{"slow-headers", "slow headers (a header byte every 10 ms, forever)", "/slow-headers",
			Want{Status: 0, ErrKinds: []string{KindTimeout}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page)
				w.trickle(conn, "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 1, 10*time.Millisecond)
			}},
		{"slow-body", "slow body (100 B/s of 100,000 B announced)", "/slow-body",
			Want{Status: 200, ErrKinds: []string{KindSlow, KindTimeout}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"Content-Length: 100000\r\n\r\n")
				w.trickle(conn, "<p>slow</p>", 1, 10*time.Millisecond)
			}},
		{"steady-body", "steady slow body (about 8 KiB/s of 10 MB announced)", "/steady-body",
			Want{Status: 200, ErrKinds: []string{KindTimeout, KindSlow}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"Content-Length: 10000000\r\n\r\n")
				w.trickle(conn, "<p>slow</p>", 80, 10*time.Millisecond)
			}},
		{"short-body", "Content-Length longer than the body (1000 announced, 100 sent, then closed)", "/short-body",
			Want{Status: 200, ErrKinds: []string{KindReset}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"Content-Length: 1000\r\n\r\n<title>short</title>"+strings.Repeat("a", 80))
			}},
		{"long-body", "Content-Length shorter than the body (10 announced, 100 sent)", "/long-body",
			Want{Status: 200},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"Content-Length: 10\r\n\r\n"+strings.Repeat("b", 100))
				w.sleep(50 * time.Millisecond)
			}},
		{"bad-chunk", "broken chunked framing (a chunk size that is not hex)", "/bad-chunk",
			Want{Status: 200, ErrKinds: []string{KindProtocol}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nhello\r\n")
			}},
		{"cut-chunked", "chunked body cut off (no last chunk, connection closed)", "/cut-chunked",
			Want{Status: 200, ErrKinds: []string{KindReset}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"Transfer-Encoding: chunked\r\n\r\n14\r\n<title>cut</title>..\r\n")
			}},
		{"reset", "reset mid-body (RST after 100 of 100,000 bytes)", "/reset",
			Want{Status: 200, ErrKinds: []string{KindReset}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"Content-Length: 100000\r\n\r\n"+strings.Repeat("a", 100))
				w.sleep(50 * time.Millisecond)
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0) // Close sends RST
				}
			}},
		{"huge-headers", "huge headers (one header line of 2 MiB)", "/huge-headers",
			Want{Status: 0, ErrKinds: []string{KindProtocol}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, page+"X-Big: ")
				chunk := strings.Repeat("a", 64<<10)
				for range 32 {
					if _, err := io.WriteString(conn, chunk); err != nil {
						return
					}
				}
				io.WriteString(conn, "\r\n\r\n")
			}},
		{"many-headers", "huge headers (20,000 header lines)", "/many-headers",
			Want{Status: 0, ErrKinds: []string{KindProtocol}},
			func(conn net.Conn, _ *http.Request) {
				var b strings.Builder
				b.WriteString(page)
				for i := range 20000 {
					fmt.Fprintf(&b, "X-H%d: v\r\n", i)
				}
				b.WriteString("Content-Length: 0\r\n\r\n")
				io.WriteString(conn, b.String())
			}},
		{"not-http", "not HTTP (an SSH banner)", "/not-http",
			Want{Status: 0, ErrKinds: []string{KindProtocol}},
			func(conn net.Conn, _ *http.Request) {
				io.WriteString(conn, "SSH-2.0-OpenSSH_9.6\r\n")
			}},
	} {
		base, err := w.rawHost(c.name, okPage(c.name), true, c.handle)
		if err != nil {
			return err
		}
		link(c.class, base+c.path, c.want)
		ordinary(base)
	}
	return nil
}
