package hostileweb

import (
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// build starts every host and links the web together.
func (w *Web) build() error {
	o := w.o
	// The ordinary hosts first: their base URLs name the pages.
	var pages [2]map[string]string // path -> body, filled below
	pages[0], pages[1] = map[string]string{}, map[string]string{}
	ordinary := func(i int) (host int, path string) {
		if i == 0 {
			return 0, "/"
		}
		return i % 2, "/page/" + strconv.Itoa(i) + ".html"
	}
	var bases [2]string
	for h := range bases {
		h := h
		base, err := w.httpHost(fmt.Sprintf("www-%c", 'a'+h), func(string) http.HandlerFunc {
			return func(rw http.ResponseWriter, r *http.Request) {
				body, ok := pages[h][r.URL.RequestURI()]
				if !ok {
					http.NotFound(rw, r)
					return
				}
				rw.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(rw, body)
			}
		})
		if err != nil {
			return err
		}
		bases[h] = base
	}
	for i := range o.Pages {
		h, p := ordinary(i)
		w.Ordinary = append(w.Ordinary, bases[h]+p)
	}
	w.Seed = w.Ordinary[0]

	// entrances are the hostile URLs and trap entrances ordinary pages
	// link to, and the ordinary pages of hostile hosts.
	var entrances []string
	add := func(class, u string, want Want) {
		w.Cases = append(w.Cases, Case{Class: class, URL: u, Want: want})
	}
	link := func(class, u string, want Want) {
		add(class, u, want)
		entrances = append(entrances, u)
	}
	okPage := func(host string) string { return html("ordinary page of the "+host+" host", []string{w.Seed}) }
	hostileOrdinary := func(base string) {
		w.Ordinary = append(w.Ordinary, base+"/ok.html")
		entrances = append(entrances, base+"/ok.html")
	}

	if err := w.rawCases(link, okPage, hostileOrdinary); err != nil {
		return err
	}
	if err := w.miscHost(link, add, okPage, hostileOrdinary); err != nil {
		return err
	}
	if err := w.robotsHosts(link); err != nil {
		return err
	}
	if err := w.trapHosts(link, func(tr Trap) {
		w.Traps = append(w.Traps, tr)
		entrances = append(entrances, tr.Entrance)
	}); err != nil {
		return err
	}

	// Link the ordinary pages: a tree from the seed, a cross link each, and
	// the entrances spread over them.
	links := make([][]string, o.Pages)
	for i := range o.Pages {
		for _, c := range []int{2*i + 1, 2*i + 2, (i*7 + 3) % o.Pages, 0} {
			if c < o.Pages && c != i {
				links[i] = append(links[i], w.Ordinary[c])
			}
		}
	}
	for j, e := range entrances {
		i := (j*5 + 1) % o.Pages
		links[i] = append(links[i], e)
	}
	for i := range o.Pages {
		h, p := ordinary(i)
		pages[h][p] = html(fmt.Sprintf("Ordinary page %d", i), links[i])
	}
	return nil
}

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

// miscHost serves the net/http cases on one host: endless bodies, bombs,
// a giant page, deep nesting, charsets, redirect loops and chains.
func (w *Web) miscHost(link, add func(string, string, Want), okPage func(string) string, ordinary func(string)) error {
	o := w.o
	giant := max(8<<20, 2*o.MaxBody)
	// Deep nesting: as many <div>s as fit under --max-body, then a link.
	depth := int(min(100000, (o.MaxBody-4096)/5))
	var deep strings.Builder
	deep.WriteString("<!doctype html><html><head><title>deep</title></head><body>")
	deep.WriteString(strings.Repeat("<div>", depth))
	fmt.Fprintf(&deep, `<a href="%s">the bottom</a>`, w.Seed)
	deep.WriteString(strings.Repeat("</div>", min(depth, 100)))
	deep.WriteString("</body></html>")
	deepBody := deep.String()
	if int64(len(deepBody)) > o.MaxBody { // only the opening tags and the link must fit
		deepBody = deepBody[:o.MaxBody]
	}

	charsets := map[string]struct {
		ctype, body string
	}{
		"/cs/header-latin1":   {"text/html; charset=iso-8859-1", "<html><head><title>caf\xe9 cr\xe8me</title></head><body><p>na\xefve</p></body></html>"},
		"/cs/bom-utf16":       {"text/html", utf16le("<html><head><title>\u03a9mega \u00fcn\u00efcode</title></head><body><p>sixteen bits</p></body></html>")},
		"/cs/bom-over-header": {"text/html; charset=iso-8859-1", "\xef\xbb\xbf<html><head><title>na\u00efve</title></head><body></body></html>"},
		"/cs/meta-1251":       {"text/html", "<html><head><meta charset=\"windows-1251\"><title>\xcf\xf0\xe8\xe2\xe5\xf2</title></head><body></body></html>"},
		"/cs/meta-http-equiv": {"text/html", "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=shift_jis\"><title>\x93\xfa\x96\x7b</title></head><body></body></html>"},
		"/cs/invalid-utf8":    {"text/html; charset=utf-8", "<html><head><title>bad \xff\xfe bytes</title></head><body><p>\xc3\x28 \xed\xa0\x80</p></body></html>"},
		"/cs/unknown-label":   {"text/html; charset=x-klingon", "<html><head><title>plain ascii</title></head><body></body></html>"},
	}

	base, err := w.httpHost("misc", func(base string) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			p := r.URL.Path
			h := rw.Header()
			switch {
			case p == "/ok.html":
				h.Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(rw, okPage("misc"))
			case p == "/endless" || p == "/endless-length":
				h.Set("Content-Type", "text/html")
				if p == "/endless-length" {
					h.Set("Content-Length", "1099511627776") // 1 TiB announced
				}
				chunk := []byte(strings.Repeat("<p>more</p>", 1000))
				for {
					if _, err := rw.Write(chunk); err != nil {
						return
					}
				}
			case strings.HasPrefix(p, "/bomb/"):
				var body []byte
				switch p {
				case "/bomb/gzip":
					h.Set("Content-Encoding", "gzip")
					body = gzipBomb()
				case "/bomb/deflate":
					h.Set("Content-Encoding", "deflate")
					body = zlibBomb()
				case "/bomb/deflate-raw":
					h.Set("Content-Encoding", "deflate")
					body = rawBomb()
				case "/bomb/br":
					h.Set("Content-Encoding", "br")
					body = []byte(brotliBomb)
				default:
					http.NotFound(rw, r)
					return
				}
				h.Set("Content-Type", "text/html")
				rw.Write(body)
			case p == "/giant.html":
				h.Set("Content-Type", "text/html; charset=utf-8")
				h.Set("Content-Length", strconv.FormatInt(giant, 10))
				head := "<!doctype html><html><head><title>giant</title></head><body>"
				io.WriteString(rw, head)
				para := []byte(strings.Repeat("<p>a giant page of text, on and on.</p>\n", 1000))
				for left := giant - int64(len(head)); left > 0; left -= int64(len(para)) {
					if _, err := rw.Write(para[:min(left, int64(len(para)))]); err != nil {
						return
					}
				}
			case p == "/deep.html":
				h.Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(rw, deepBody)
			case strings.HasPrefix(p, "/cs/"):
				c, ok := charsets[p]
				if !ok {
					http.NotFound(rw, r)
					return
				}
				h.Set("Content-Type", c.ctype)
				io.WriteString(rw, c.body)
			case p == "/redirect/loop":
				http.Redirect(rw, r, "/redirect/loop", http.StatusFound)
			case p == "/redirect/ping":
				http.Redirect(rw, r, "/redirect/pong", http.StatusFound)
			case p == "/redirect/pong":
				http.Redirect(rw, r, "/redirect/ping", http.StatusMovedPermanently)
			case strings.HasPrefix(p, "/redirect/chain/"):
				n, err := strconv.Atoi(strings.TrimPrefix(p, "/redirect/chain/"))
				if err != nil {
					http.NotFound(rw, r)
					return
				}
				http.Redirect(rw, r, "/redirect/chain/"+strconv.Itoa(n+1), http.StatusFound)
			default:
				http.NotFound(rw, r)
			}
		}
	})
	if err != nil {
		return err
	}
	ordinary(base)
	truncated := Want{Status: 200, Truncated: true}
	link("endless body", base+"/endless", truncated)
	link("endless body (1 TiB Content-Length)", base+"/endless-length", truncated)
	bomb := Want{Status: 200, Truncated: o.MaxBody < bombMiB<<20}
	link("gzip bomb (50 MiB of zeros)", base+"/bomb/gzip", bomb)
	link("deflate bomb (zlib, 50 MiB of zeros)", base+"/bomb/deflate", bomb)
	link("deflate bomb (raw, 50 MiB of zeros)", base+"/bomb/deflate-raw", bomb)
	link("brotli bomb (50 MiB of zeros)", base+"/bomb/br", bomb)
	link(fmt.Sprintf("giant page (%d MiB)", giant>>20), base+"/giant.html", Want{Status: 200, Truncated: true, Title: "giant"})
	link(fmt.Sprintf("deep nesting (%d nested divs)", depth), base+"/deep.html", Want{Status: 200, Title: "deep", Outlink: w.Seed})

	link("charset from the header (iso-8859-1)", base+"/cs/header-latin1", Want{Status: 200, Title: "café crème", Charset: "windows-1252"})
	link("charset from a BOM (UTF-16LE)", base+"/cs/bom-utf16", Want{Status: 200, Title: "Ωmega ünïcode", Charset: "utf-16le"})
	link("a UTF-8 BOM over a latin-1 header", base+"/cs/bom-over-header", Want{Status: 200, Title: "naïve", Charset: "utf-8"})
	link("charset from <meta charset> (windows-1251)", base+"/cs/meta-1251", Want{Status: 200, Title: "Привет", Charset: "windows-1251"})
	link("charset from <meta http-equiv> (Shift_JIS)", base+"/cs/meta-http-equiv", Want{Status: 200, Title: "日本", Charset: "shift_jis"})
	link("invalid UTF-8 declared UTF-8", base+"/cs/invalid-utf8", Want{Status: 200, Title: "bad \ufffd bytes", Charset: "utf-8"})
	link("an unknown charset label", base+"/cs/unknown-label", Want{Status: 200, Title: "plain ascii", Charset: "utf-8"})

	link("redirect loop (to itself)", base+"/redirect/loop", Want{Status: 302})
	link("redirect loop (two URLs)", base+"/redirect/ping", Want{Status: 302})
	add("redirect loop (two URLs)", base+"/redirect/pong", Want{Status: 301})
	for n := range o.MaxRedirects + 2 {
		u := base + "/redirect/chain/" + strconv.Itoa(n)
		want := Want{Status: 302}
		if n > o.MaxRedirects {
			want = Want{NotFetched: true} // past --max-redirects hops
		}
		if n == 0 {
			link("endless redirect chain", u, want)
		} else {
			add("endless redirect chain", u, want)
		}
	}
	return nil
}

// repeatingPaths counts the sequences of at most depth segments of {a, b}
// (the empty one included) in which neither occurs more than max times.
func repeatingPaths(max, depth int) int {
	n := 0
	for a := 0; a <= max; a++ {
		for b := 0; b <= max && a+b <= depth; b++ {
			n += binomial(a+b, a)
		}
	}
	return n
}

func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

// utf16le encodes s as UTF-16LE with a byte order mark.
func utf16le(s string) string {
	b := []byte{0xff, 0xfe}
	for _, r := range s {
		if r > 0xffff {
			r = '?'
		}
		b = append(b, byte(r), byte(r>>8))
	}
	return string(b)
}

// robotsHosts are hosts a crawler must give up because their robots.txt
// never answers, answers 503, or their name does not resolve.
func (w *Web) robotsHosts(link func(string, string, Want)) error {
	hang, err := w.rawHost("robots-hang", "", false, func(conn net.Conn, _ *http.Request) {
		<-w.stop // robots.txt included: nothing, ever
	})
	if err != nil {
		return err
	}
	unavailable, err := w.httpHost("robots-503", func(string) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.Error(rw, "down for maintenance", http.StatusServiceUnavailable)
				return
			}
			rw.Header().Set("Content-Type", "text/html")
			io.WriteString(rw, html("behind a robots.txt that answers 503", nil))
		}
	})
	if err != nil {
		return err
	}
	gaveUp := Want{Status: 0, ErrKinds: []string{KindRobots}, ErrContains: "robots.txt unreachable"}
	link("robots.txt never answers", hang+"/page.html", gaveUp)
	link("robots.txt answers 503", unavailable+"/page.html", gaveUp)
	link("a host name that does not resolve", "http://"+w.Unresolvable+"/page.html",
		Want{Status: 0, ErrKinds: []string{KindRobots, KindDNS}, ErrContains: w.Unresolvable})
	return nil
}

// trapHosts serve endless dynamic URLs after Pant, Srinivasan and Menczer
// (calendars, ever-deeper paths, session IDs, query explosions) and a page
// of thousands of links, each on its own host.
func (w *Web) trapHosts(link func(string, string, Want), trap func(Trap)) error {
	serve := func(name string, write func(r *http.Request) (links []string, ok bool)) (string, error) {
		return w.httpHost(name, func(string) http.HandlerFunc {
			return func(rw http.ResponseWriter, r *http.Request) {
				links, ok := write(r)
				if !ok {
					http.NotFound(rw, r)
					return
				}
				rw.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(rw, html(name+" "+r.URL.RequestURI(), links))
			}
		})
	}

	// A calendar: every day links to the next and previous day and month.
	cal, err := serve("calendar", func(r *http.Request) ([]string, bool) {
		day, err := time.Parse("/cal/2006/01/02", r.URL.Path)
		if err != nil {
			return nil, false
		}
		var out []string
		for _, d := range []time.Time{day.AddDate(0, 0, 1), day.AddDate(0, 0, -1), day.AddDate(0, 1, 0), day.AddDate(0, -1, 0)} {
			out = append(out, d.Format("/cal/2006/01/02"))
		}
		return out, true
	})
	if err != nil {
		return err
	}
	trap(Trap{Class: "endless calendar", Entrance: cal + "/cal/2026/01/15", Base: cal})

	// Ever-deeper paths: each level links one new segment deeper, until
	// --max-path-depth drops the link (the entrance has one segment).
	deep, err := serve("deep-paths", func(r *http.Request) ([]string, bool) {
		if !strings.HasPrefix(r.URL.Path, "/deep/") {
			return nil, false
		}
		return []string{strconv.Itoa(strings.Count(r.URL.Path, "/")) + "/"}, true
	})
	if err != nil {
		return err
	}
	trap(Trap{Class: "ever-deeper paths", Entrance: deep + "/deep/", Base: deep, Fetches: w.o.MaxPathDepth})

	// Repeating segments: relative links a/ and b/ on every page, as a
	// page served for any path makes them: /docs/a/b/a/b/... Only paths in
	// which neither repeats more than --max-repeated-segments are taken.
	paths, err := serve("repeating-paths", func(r *http.Request) ([]string, bool) {
		if !strings.HasPrefix(r.URL.Path, "/docs/") {
			return nil, false
		}
		return []string{"a/", "b/"}, true
	})
	if err != nil {
		return err
	}
	trap(Trap{Class: "paths of repeating segments", Entrance: paths + "/docs/", Base: paths,
		Fetches: repeatingPaths(w.o.MaxRepeatedSegments, w.o.MaxPathDepth-1)})

	// Query parameters piling up: each page links to itself with one more.
	params, err := serve("query-params", func(r *http.Request) ([]string, bool) {
		if r.URL.Path != "/filter" {
			return nil, false
		}
		n := len(r.URL.Query())
		return []string{"/filter?" + r.URL.RawQuery + "&f" + strconv.Itoa(n+1) + "=" + strconv.Itoa(n+1)}, true
	})
	if err != nil {
		return err
	}
	trap(Trap{Class: "query parameters piling up", Entrance: params + "/filter?f1=1", Base: params, Fetches: w.o.MaxQueryParams})

	// Session IDs: every response hands out new ones in its links.
	var sessions atomic.Uint64
	sid := func() string {
		h := fnv.New64a()
		fmt.Fprint(h, sessions.Add(1))
		return fmt.Sprintf("%016x", h.Sum64())
	}
	session, err := serve("session", func(r *http.Request) ([]string, bool) {
		if !strings.HasPrefix(r.URL.Path, "/shop") {
			return nil, false
		}
		return []string{
			"/shop;jsessionid=" + sid(),
			"/shop/item?id=" + strconv.Itoa(int(sessions.Load()%50)) + "&PHPSESSID=" + sid(),
			"/shop/cart?sid=" + sid(),
		}, true
	})
	if err != nil {
		return err
	}
	trap(Trap{Class: "session IDs in URLs", Entrance: session + "/shop", Base: session})

	// A query explosion: faceted search where every page links to each
	// facet added or changed.
	facets := map[string][]string{
		"color": {"red", "green", "blue", "black"}, "size": {"s", "m", "l", "xl"},
		"sort": {"price", "name", "new"}, "brand": {"acme", "globex", "initech"},
		"page": {"1", "2", "3", "4", "5"}, "view": {"grid", "list"},
	}
	query, err := serve("query", func(r *http.Request) ([]string, bool) {
		if r.URL.Path != "/search" {
			return nil, false
		}
		q := r.URL.Query()
		var out []string
		for name, values := range facets {
			for _, v := range values {
				if q.Get(name) == v {
					continue
				}
				n := url.Values{}
				for k, vs := range q {
					n[k] = vs
				}
				n.Set(name, v)
				out = append(out, "/search?"+n.Encode())
			}
		}
		return out, true
	})
	if err != nil {
		return err
	}
	trap(Trap{Class: "query explosion (faceted search)", Entrance: query + "/search?q=boots", Base: query})

	// Thousands of links on one page, as many as fit under --max-body.
	n := int(min(20000, (w.o.MaxBody-4096)/int64(len(`<a href="/i/12345">.</a>`)+1)))
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>thousands of links</title></head><body>")
	for i := range n {
		fmt.Fprintf(&b, `<a href="/i/%d">.</a> `, i)
	}
	b.WriteString("</body></html>")
	many := b.String()
	links, err := w.httpHost("many-links", func(string) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/links":
				rw.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(rw, many)
			case strings.HasPrefix(r.URL.Path, "/i/"):
				rw.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(rw, html("item "+r.URL.Path, nil))
			default:
				http.NotFound(rw, r)
			}
		}
	})
	if err != nil {
		return err
	}
	link(fmt.Sprintf("thousands of links on a page (%d)", n), links+"/links",
		Want{Status: 200, Title: "thousands of links", ParsedTruncated: n > w.o.MaxLinks})
	trap(Trap{Class: fmt.Sprintf("thousands of links on a page (%d)", n), Entrance: links + "/links", Base: links})
	return nil
}
