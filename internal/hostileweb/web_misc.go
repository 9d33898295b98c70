package hostileweb

// The net/http cases of one host: endless bodies, bombs, a giant page, deep
// nesting, charsets, redirect loops and chains.

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

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
