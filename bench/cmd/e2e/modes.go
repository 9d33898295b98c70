package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// measured is what one crawl cost, from its processes.
type measured struct {
	wall      time.Duration
	cpu       time.Duration // children
	rss       int64         // sum over the processes of their peak RSS
	serverCPU time.Duration // machine NATS + Redis (cluster mode), upper bound
	natsCPU   time.Duration // the nats-server part of serverCPU
	webCPU    time.Duration // the benchmark's own process: serving the synthetic web
	perProc   map[string]time.Duration
}

// runAllInOne runs `trawler run` once.
func (h *harness) runAllInOne(ctx context.Context, dir, profile string) (measured, error) {
	args := append([]string{"run", "--data-dir", filepath.Join(dir, "data"), "--progress=false"}, h.crawlFlags()...)
	bin := h.trawler
	if profile == "run" {
		bin, args = h.prof, append([]string{"-cpuprofile", filepath.Join(dir, "run.pprof")}, args...)
	}
	t0 := time.Now()
	p, err := start(dir, "run", bin, args...)
	if err != nil {
		return measured{}, err
	}
	if err := p.wait(h.timeout); err != nil {
		return measured{}, err
	}
	wall := time.Since(t0)
	cpu, rss := p.usage()
	_ = os.RemoveAll(filepath.Join(dir, "data")) // logs and profiles stay; the crawl's state can be large
	return measured{wall: wall, cpu: cpu, rss: rss, perProc: map[string]time.Duration{"run": cpu}}, nil
}

// crawlFlags are the settings every Trawler mode gets: same delay as
// Colly, no response-time factor, private addresses allowed, any host.
func (h *harness) crawlFlags() []string {
	return append([]string{"--allow-private", "--politeness-delay", h.delay.String(), "--politeness-factor", "0",
		"--scope", "any", "--seeds-file", h.seeds}, h.extra...)
}

// runCluster runs the four services as separate processes against the
// machine's NATS and Redis, seeds, waits with `trawler status --wait`, then
// stops the services and removes the run's streams and keys.
func (h *harness) runCluster(ctx context.Context, dir string, fetchers, parsers int, profile string) (measured, error) {
	prefix := "e2e-" + randHex(4)
	common := append([]string{"--nats", h.natsURL, "--redis", h.redisAddr, "--prefix", prefix}, h.crawlFlags()...)
	defer h.cleanup(prefix)
	var procs []*proc
	stopAll := func() {
		for _, p := range procs {
			p.stop()
		}
	}
	defer stopAll()
	nats0, redis0 := serverCPU("nats-server"), serverCPU("redis-server")
	t0 := time.Now()
	launch := func(name, svc string) error {
		bin, args := h.trawler, append([]string{svc}, common...)
		if svc == profile || slices.Contains(strings.Split(h.profileAll, ","), svc) {
			bin, args = h.prof, append([]string{"-cpuprofile", filepath.Join(dir, name+".pprof"), svc}, common...)
		}
		p, err := start(dir, name, bin, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return err
	}
	for _, s := range []string{"dedup", "frontier"} {
		if err := launch(s, s); err != nil {
			return measured{}, err
		}
	}
	for i := range fetchers {
		if err := launch(fmt.Sprintf("fetcher-%d", i), "fetcher"); err != nil {
			return measured{}, err
		}
	}
	for i := range parsers {
		if err := launch(fmt.Sprintf("parser-%d", i), "parser"); err != nil {
			return measured{}, err
		}
	}
	seed, err := start(dir, "seed", h.trawler, append([]string{"seed"}, common...)...)
	if err != nil {
		return measured{}, err
	}
	if err := seed.wait(time.Minute); err != nil {
		return measured{}, err
	}
	status, err := start(dir, "status", h.trawler, append([]string{"status", "--wait", "--every", "250ms"}, common...)...)
	if err != nil {
		return measured{}, err
	}
	if err := status.wait(h.timeout); err != nil {
		return measured{}, err
	}
	wall := time.Since(t0)
	stopAll()
	m := measured{wall: wall, perProc: map[string]time.Duration{}}
	for _, p := range append(procs, seed) {
		c, r := p.usage()
		m.cpu += c
		m.rss += r
		m.perProc[strings.SplitN(p.name, "-", 2)[0]] += c
	}
	m.natsCPU = serverCPU("nats-server") - nats0
	m.serverCPU = m.natsCPU + serverCPU("redis-server") - redis0
	return m, nil
}

// cleanup deletes the streams, key-value buckets and Redis keys of prefix.
func (h *harness) cleanup(prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := strings.ToUpper(strings.ReplaceAll(prefix, ".", "_"))
	if nc, err := nats.Connect(h.natsURL); err == nil {
		if js, err := jetstream.New(nc); err == nil {
			names := js.StreamNames(ctx)
			var del []string
			for n := range names.Name() {
				if strings.HasPrefix(n, up+"_") || strings.HasPrefix(n, "KV_"+up+"_") {
					del = append(del, n)
				}
			}
			for _, n := range del {
				_ = js.DeleteStream(ctx, n)
			}
		}
		nc.Close()
	}
	rdb := redis.NewClient(&redis.Options{Addr: h.redisAddr})
	defer rdb.Close()
	it := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var keys []string
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		_ = rdb.Del(ctx, keys[:n]...).Err()
		keys = keys[n:]
	}
}

// runColly runs the Colly baseline as a child process.
func (h *harness) runColly(ctx context.Context, dir string) (measured, error) {
	c := h.web.Config()
	t0 := time.Now()
	p, err := start(dir, "colly", h.colly, "-web-seed", strconv.FormatUint(c.Seed, 10), "-hosts", strconv.Itoa(c.Hosts),
		"-pages", strconv.Itoa(c.Pages), "-port", strconv.Itoa(c.Port), "-seed-hosts", strconv.Itoa(c.SeedHosts), "-delay", h.delay.String())
	if err != nil {
		return measured{}, err
	}
	if err := p.wait(h.timeout); err != nil {
		return measured{}, err
	}
	cpu, rss := p.usage()
	return measured{wall: time.Since(t0), cpu: cpu, rss: rss, perProc: map[string]time.Duration{"colly": cpu}}, nil
}

// runWget runs GNU Wget's recursive mode, the classic single-connection
// crawler: one request at a time over the whole web, --wait (the delay)
// between any two, robots.txt obeyed, every file deleted once parsed. Being
// sequential it takes hours on a large web, so it is stopped after
// h.wgetFor and judged on what it fetched by then.
func (h *harness) runWget(ctx context.Context, dir string) (measured, error) {
	bin, err := exec.LookPath("wget")
	if err != nil {
		return measured{}, fmt.Errorf("wget mode: %w", err)
	}
	// With --input-file, wget runs one recursion per listed URL, each with
	// its own visited set: every seed would crawl the whole web again. One
	// start page linking every seed, served outside the audited web, makes
	// it one crawl.
	startURL, stopStart, err := serveStartPage(h.web.Seeds())
	if err != nil {
		return measured{}, err
	}
	defer stopStart()
	args := []string{"--recursive", "--level=inf", "--span-hosts", "--execute=robots=on",
		"--wait=" + strconv.FormatFloat(h.delay.Seconds(), 'f', -1, 64),
		"--delete-after", "--no-directories", "--directory-prefix=" + filepath.Join(dir, "wget-files"),
		"--tries=1", "--timeout=30", "--no-verbose", startURL}
	t0 := time.Now()
	p, err := start(dir, "wget", bin, args...)
	if err != nil {
		return measured{}, err
	}
	// Wget exits non-zero whenever a server answered 404 (exit status 8):
	// its own log says what went wrong, the server's log what it fetched.
	_ = p.waitOrStop(h.wgetFor)
	wall := time.Since(t0)
	cpu, rss := p.usage()
	_ = os.RemoveAll(filepath.Join(dir, "wget-files"))
	return measured{wall: wall, cpu: cpu, rss: rss, perProc: map[string]time.Duration{"wget": cpu}}, nil
}

// serveStartPage serves an HTML page linking every seed on a loopback
// address of its own, and returns its URL and a function that stops it.
func serveStartPage(seeds []string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var page strings.Builder
	page.WriteString("<!DOCTYPE html>\n<html><body>\n")
	for _, s := range seeds {
		fmt.Fprintf(&page, "<a href=\"%s\">%s</a>\n", html.EscapeString(s), html.EscapeString(s))
	}
	page.WriteString("</body></html>\n")
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page.String())
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Close() }, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mkdir(base, name string) (string, error) {
	d := filepath.Join(base, name)
	return d, os.MkdirAll(d, 0o755)
}
