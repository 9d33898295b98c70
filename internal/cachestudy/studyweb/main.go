// Command studyweb serves the local webs the cache study crawls
// (docs/cache-study.md), each host on its own loopback address:
//
//	go run ./internal/cachestudy/studyweb synth --hosts 200 --seeds seeds.txt
//	go run ./internal/cachestudy/studyweb dir --seeds seeds.txt /usr/share/doc/python3.13/html ...
//
// synth is a generated web with the link structure of internal/linkstream
// (popular hosts and pages, per-host navigation, 20% cross-host links, a
// third of a page's links repeated); dir serves each directory as a host
// (a real document corpus). Both write the hosts' front pages to --seeds and
// serve until interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"html"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "synth" && os.Args[1] != "dir") {
		fmt.Fprintln(os.Stderr, "usage: studyweb synth|dir [flags] [DIR...]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	hosts := fs.Int("hosts", 200, "synth: number of hosts")
	meanPages := fs.Int("pages", 400, "synth: mean pages per host (log-normal)")
	seed := fs.Uint64("seed", 1, "synth: seed of the generated web")
	port := fs.Int("port", 8080, "port on every address")
	net3 := fs.Int("net", 2, "hosts listen on 127.<net>.x.y")
	seeds := fs.String("seeds", "seeds.txt", "write the hosts' front-page URLs here")
	_ = fs.Parse(os.Args[2:])

	var handlers []http.Handler
	switch mode {
	case "synth":
		w := newWeb(*hosts, *meanPages, *seed)
		for h := range *hosts {
			handlers = append(handlers, hostHandler{w, h})
		}
	case "dir":
		for _, d := range fs.Args() {
			handlers = append(handlers, http.FileServer(http.Dir(d)))
		}
	}
	if len(handlers) == 0 || len(handlers) > 250*250 {
		log.Fatal("studyweb: no hosts to serve (or too many)")
	}
	var urls []string
	for i, h := range handlers {
		ip := fmt.Sprintf("127.%d.%d.%d", *net3, 1+i/250, 1+i%250)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(*port)))
		if err != nil {
			log.Fatal(err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		urls = append(urls, "http://"+ln.Addr().String()+"/")
	}
	if err := os.WriteFile(*seeds, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %d hosts (%s ... %s); seeds in %s", len(urls), urls[0], urls[len(urls)-1], *seeds)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	<-ctx.Done()
}

// web is the generated site: pages[h] pages on host h; a page's links are
// drawn from a generator seeded by (host, page), so they never change.
type web struct {
	pages    []int
	local    []zipf // per host: its pages' popularity for its own links
	inbound  []zipf // per host: steeper, for links from other hosts
	hostZipf zipf
	seed     uint64
}

func newWeb(hosts, mean int, seed uint64) *web {
	r := rand.New(rand.NewPCG(seed, 1))
	w := &web{hostZipf: newZipf(hosts, 1.0), seed: seed}
	mu := math.Log(float64(mean)) - 0.5 // log-normal, sigma 1: mean = exp(mu + 1/2)
	for range hosts {
		n := max(5, min(20*mean, int(math.Exp(mu+r.NormFloat64()))))
		w.pages = append(w.pages, n)
		w.local = append(w.local, newZipf(n, 0.9))
		w.inbound = append(w.inbound, newZipf(n, 1.2))
	}
	return w
}

type hostHandler struct {
	w *web
	h int
}

// host h's address as served: the same scheme as main's listeners.
func (w *web) hostURL(r *http.Request, h int) string {
	_, port, _ := net.SplitHostPort(r.Host)
	parts := strings.Split(r.Host, ".")
	return fmt.Sprintf("http://127.%s.%d.%d:%s", parts[1], 1+h/250, 1+h%250, port)
}

func (hh hostHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w, h := hh.w, hh.h
	i := 0
	if r.URL.Path != "/" {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || !strings.HasPrefix(r.URL.Path, "/p/") || n < 1 || n >= w.pages[h] {
			http.NotFound(rw, r)
			return
		}
		i = n
	}
	rng := rand.New(rand.NewPCG(w.seed, uint64(h)<<32|uint64(i)))
	path := func(p int) string {
		if p == 0 {
			return "/"
		}
		return "/p/" + strconv.Itoa(p)
	}
	n := w.pages[h]
	var links []string
	for p := range min(10, n) { // navigation, the same on every page
		links = append(links, path(p))
	}
	if i+1 < n { // a chain, so every page is reachable
		links = append(links, path(i+1))
	}
	count := int(math.Exp(math.Log(15) + 0.8*rng.NormFloat64()))
	for range min(count, 300) {
		switch {
		case len(links) > 0 && rng.IntN(3) == 0: // a third repeat a link of the page
			links = append(links, links[rng.IntN(len(links))])
		case rng.IntN(5) == 0: // a fifth leave the host, mostly for popular hosts and pages
			o := w.hostZipf.sample(rng)
			links = append(links, w.hostURL(r, o)+path(w.inbound[o].sample(rng)))
		default:
			links = append(links, path(w.local[h].sample(rng)))
		}
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>host %d page %d</title></head><body>\n", h, i)
	for k, l := range links {
		fmt.Fprintf(&b, "<a href=\"%s\">link %d</a>\n", html.EscapeString(l), k)
	}
	b.WriteString("</body></html>\n")
	_, _ = rw.Write([]byte(b.String()))
}

// zipf samples 0..n-1 with P(k) proportional to 1/(k+1)^s, by inverting the
// cumulative weights (binary search).
type zipf struct{ cum []float64 }

func newZipf(n int, s float64) zipf {
	cum := make([]float64, n)
	t := 0.0
	for k := range n {
		t += 1 / math.Pow(float64(k+1), s)
		cum[k] = t
	}
	return zipf{cum}
}

func (z zipf) sample(r *rand.Rand) int {
	u := r.Float64() * z.cum[len(z.cum)-1]
	lo, hi := 0, len(z.cum)-1
	for lo < hi {
		m := (lo + hi) / 2
		if z.cum[m] < u {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
