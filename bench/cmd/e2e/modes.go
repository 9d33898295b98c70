package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"io"
	"io/fs"
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
	// written is what the crawler's processes caused to be written to
	// storage (write_bytes), serverWritten the machine NATS's and Redis's
	// over the run (cluster mode, upper bound).
	written, serverWritten int64
	// outputs is the size of the user's own outputs (--out, --archive),
	// which the "disk bytes a page" goal does not count.
	outputs int64
	// counters are the fsync counters read from the crawler's /metrics
	// (fsyncCounters; all-in-one modes), absent when it has none.
	counters map[string]float64
}

// runAllInOne runs `trawler run` once; variant "out" adds --out (a JSON
// Lines file of the parsed pages), "warc" adds --archive (a WARC archive of
// every page, and the same JSON Lines).
func (h *harness) runAllInOne(ctx context.Context, dir, profile, variant string) (measured, error) {
	metrics, err := freeAddr()
	if err != nil {
		return measured{}, err
	}
	args := append([]string{"run", "--data-dir", filepath.Join(dir, "data"), "--progress=false", "--metrics-addr", metrics}, h.crawlFlags()...)
	switch variant {
	case "":
	case "out":
		args = append(args, "--out", filepath.Join(dir, "data-out", "out.jsonl"))
	case "warc":
		args = append(args, "--archive", filepath.Join(dir, "data-out", "archive"))
	default:
		return measured{}, fmt.Errorf("run variant %q", variant)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data-out"), 0o755); err != nil {
		return measured{}, err
	}
	bin := h.trawler
	if profile == "run" {
		bin, args = h.prof, append([]string{"-cpuprofile", filepath.Join(dir, "run.pprof")}, args...)
	}
	t0 := time.Now()
	p, err := start(dir, "run", bin, args...)
	if err != nil {
		return measured{}, err
	}
	sc := scrapeMetrics(metrics, fsyncCounters, 250*time.Millisecond)
	err = p.wait(h.timeout)
	// The wall ends when the crawler does: the scraper's last request
	// may still wait out its timeout on the exiting process (up to 250 ms,
	// which a crawl of 600 pages paid and Colly's did not).
	wall := time.Since(t0)
	counters := sc.finish()
	if err != nil {
		return measured{}, err
	}
	cpu, rss := p.usage()
	outputs := treeSize(filepath.Join(dir, "data-out"))
	// Logs and profiles stay; the crawl's state and output can be large.
	_ = os.RemoveAll(filepath.Join(dir, "data"))
	_ = os.RemoveAll(filepath.Join(dir, "data-out"))
	return measured{wall: wall, cpu: cpu, rss: rss, perProc: map[string]time.Duration{"run": cpu}, written: p.written(), outputs: outputs, counters: counters}, nil
}

// treeSize is the bytes of the regular files under dir.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// crawlFlags are the settings every Trawler mode gets: same delay as
// Colly, no response-time factor, private addresses allowed, any host, and
// on a discovery web its DNS server.
func (h *harness) crawlFlags() []string {
	flags := []string{"--allow-private", "--politeness-delay", h.delay.String(), "--politeness-factor", "0",
		"--scope", "any", "--seeds-file", h.seeds}
	if dns := h.srv.DNSAddr(); dns != "" {
		flags = append(flags, "--dns-servers", dns)
	}
	if len(h.web.Config().Dirs) > 0 {
		// Real pages link to the whole web: follow only this one's hosts.
		flags = append(flags, "--allow", `^https?://site[0-9]+\.test(:[0-9]+)?(/|$)`)
	}
	return append(flags, h.extra...)
}

// runCluster runs the four services as separate processes against the
// machine's NATS and Redis, seeds, waits with `trawler status --wait`, then
// stops the services and removes the run's streams and keys.
//
// With archive, a fifth process, `trawler archive --out DIR`, writes the
// WARC archive and the JSON Lines of parsed pages (the services' --out),
// started first so that its consumers see every page; the parsers then
// keep the pages' text (--parsed-text, which `run` sets by itself with
// --out or --archive), and the crawl ends when the archive has written
// everything.
func (h *harness) runCluster(ctx context.Context, dir string, fetchers, parsers int, profile string, archive, withParser bool) (measured, error) {
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
	natsW0, redisW0 := serverWritten("nats-server"), serverWritten("redis-server")
	t0 := time.Now()
	launch := func(name, svc string, more ...string) error {
		args := append(append([]string{svc}, common...), more...)
		bin := h.trawler
		if svc == profile || slices.Contains(strings.Split(h.profileAll, ","), svc) {
			bin, args = h.prof, append([]string{"-cpuprofile", filepath.Join(dir, name+".pprof")}, args...)
		}
		p, err := start(dir, name, bin, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return err
	}
	var parserFlags []string
	if archive {
		out := filepath.Join(dir, "data-out", "archive")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return measured{}, err
		}
		defer os.RemoveAll(filepath.Join(dir, "data-out"))
		if err := launch("archive", "archive", "--out", out); err != nil {
			return measured{}, err
		}
		if err := h.waitArchiveConsumers(ctx, prefix, false); err != nil {
			return measured{}, err
		}
		parserFlags = []string{"--parsed-text"}
	}
	for _, s := range []string{"dedup", "frontier"} {
		if err := launch(s, s); err != nil {
			return measured{}, err
		}
	}
	var fetcherFlags []string
	if withParser {
		fetcherFlags = append([]string{"--with-parser"}, parserFlags...)
		parsers = 0 // the fetchers parse
	}
	for i := range fetchers {
		if err := launch(fmt.Sprintf("fetcher-%d", i), "fetcher", fetcherFlags...); err != nil {
			return measured{}, err
		}
	}
	for i := range parsers {
		if err := launch(fmt.Sprintf("parser-%d", i), "parser", parserFlags...); err != nil {
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
	if err := status.waitBeside(procs, h.timeout, h.log); err != nil {
		return measured{}, err
	}
	if archive {
		if err := h.waitArchiveConsumers(ctx, prefix, true); err != nil {
			return measured{}, err
		}
	}
	wall := time.Since(t0)
	stopAll()
	m := measured{wall: wall, perProc: map[string]time.Duration{}}
	for _, p := range append(procs, seed) {
		c, r := p.usage()
		m.cpu += c
		m.rss += r
		m.written += p.written()
		m.perProc[strings.SplitN(p.name, "-", 2)[0]] += c
	}
	m.natsCPU = serverCPU("nats-server") - nats0
	m.serverCPU = m.natsCPU + serverCPU("redis-server") - redis0
	m.serverWritten = serverWritten("nats-server") - natsW0 + serverWritten("redis-server") - redisW0
	return m, nil
}

// waitArchiveConsumers waits until the archive's two durable consumers
// exist or, with drained, until they have nothing pending or unacknowledged.
func (h *harness) waitArchiveConsumers(ctx context.Context, prefix string, drained bool) error {
	nc, err := nats.Connect(h.natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream := strings.ToUpper(strings.ReplaceAll(prefix, ".", "_"))
	deadline := time.Now().Add(h.timeout)
	for {
		ready := true
		for _, c := range [][2]string{{stream + "_PAGES", "archive-warc"}, {stream + "_PARSED", "archive-jsonl"}} {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			cons, err := js.Consumer(cctx, c[0], c[1])
			var info *jetstream.ConsumerInfo
			if err == nil {
				info, err = cons.Info(cctx)
			}
			cancel()
			if err != nil || (drained && (info.NumPending > 0 || info.NumAckPending > 0)) {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("archive consumers of %s not %s after %s", prefix, map[bool]string{false: "created", true: "drained"}[drained], h.timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
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
			var counts []string
			for _, n := range del {
				if st, err := js.Stream(ctx, n); err == nil {
					counts = append(counts, fmt.Sprintf("%s %d", strings.TrimPrefix(n, up+"_"), st.CachedInfo().State.LastSeq))
				}
				_ = js.DeleteStream(ctx, n)
			}
			// The messages each stream took over the run: what the NATS
			// server's CPU goes with.
			slices.Sort(counts)
			fmt.Fprintf(h.log, "e2e: messages stored by stream: %s\n", strings.Join(counts, ", "))
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
		"-pages", strconv.Itoa(c.Pages), "-port", strconv.Itoa(c.Port), "-block", strconv.Itoa(c.Block),
		"-seed-hosts", strconv.Itoa(c.SeedHosts), "-discovery="+strconv.FormatBool(c.Discovery), "-delay", h.delay.String(),
		"-dirs", strings.Join(c.Dirs, ","))
	if err != nil {
		return measured{}, err
	}
	if err := p.wait(h.timeout); err != nil {
		return measured{}, err
	}
	cpu, rss := p.usage()
	return measured{wall: time.Since(t0), cpu: cpu, rss: rss, perProc: map[string]time.Duration{"colly": cpu}, written: p.written()}, nil
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
	var startURL string
	var args []string
	if seeds := h.web.Seeds(); len(seeds) == 1 {
		startURL = seeds[0]
	} else {
		var stopStart func()
		if startURL, stopStart, err = serveStartPage(seeds); err != nil {
			return measured{}, err
		}
		defer stopStart()
	}
	// Wget resolves names only through the system: on a discovery web it
	// goes through the web's proxy, which hands each request to its host.
	if proxy := h.srv.ProxyAddr(); proxy != "" {
		args = append(args, "--execute=use_proxy=on", "--execute=http_proxy=http://"+proxy+"/", "--execute=no_proxy=127.0.0.1")
	}
	if c := h.web.Config(); len(c.Dirs) > 0 {
		// Real pages link to the whole web: stay on this one's hosts.
		names := make([]string, c.Hosts)
		for i := range names {
			names[i] = h.web.Name(i)
		}
		args = append(args, "--domains="+strings.Join(names, ","))
	}
	args = append(args, "--recursive", "--level=inf", "--span-hosts", "--execute=robots=on",
		"--wait="+strconv.FormatFloat(h.delay.Seconds(), 'f', -1, 64),
		"--delete-after", "--no-directories", "--directory-prefix="+filepath.Join(dir, "wget-files"),
		"--tries=1", "--timeout=30", "--no-verbose", startURL)
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
	return measured{wall: wall, cpu: cpu, rss: rss, perProc: map[string]time.Duration{"wget": cpu}, written: p.written()}, nil
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
