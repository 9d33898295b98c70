package hostileweb

// The spider traps: endless dynamic URLs (calendars, ever-deeper paths,
// session IDs, query explosions) and a page of links to thousands of hosts.

import (
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

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
