package hostileweb

// The hosts whose robots.txt a crawler must give up on: it never answers,
// answers 503, or the host name does not resolve.

import (
	"io"
	"net"
	"net/http"
)

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
