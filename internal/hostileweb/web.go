package hostileweb

// Building the web: the ordinary hosts and their pages, which link to the
// hostile cases of web_raw.go, web_misc.go, web_robots.go and web_traps.go.

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
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
