// Command e2e is the end-to-end crawl benchmark: on one synthetic web
// (bench/websim) served from this process, with one request at a time per
// host and the same politeness delay, it crawls with
//
//   - the all-in-one `trawler run` (embedded NATS, bbolt): bare (run), with
//     --out (run-out) and with --archive, a WARC archive (run-warc),
//   - the four services as separate processes against the machine's NATS
//     and Redis (`trawler dedup|frontier|fetcher|parser`, `seed`, `status
//     --wait`): bare (cluster) and with `trawler archive --out`, the WARC
//     archive and JSON Lines of the services (cluster-warc); and with the
//     fetchers parsing (`fetcher --with-parser`, no parser process:
//     cluster-fp),
//   - the Colly v2 baseline (bench/colly) and GNU Wget,
//
// several times, interleaved, and reports medians of pages/s, pages per
// CPU-second, memory over the crawl, bytes written to disk and fsyncs per
// page, with the server-side audit (completeness against the ground truth,
// duplicates, robots.txt violations, per-host concurrency and gaps). The
// web is the discovery web by default (one seed, named hosts, links in
// every form; -web seeded: every home page a seed, simple hrefs). Two more
// cases follow on their own webs: politeness-bound (-polite: the share of
// hosts/delay reached) and few hosts without a delay (-few: pages/s and the
// per-host turnaround). Then it scales fetcher and parser replicas,
// profiles the hottest service, and draws plots.
//
//	cd bench && go run ./cmd/e2e -hosts 200 -pages 500 -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/bench/internal/mddoc"
	"github.com/trawlerhq/trawler/bench/websim"
)

type harness struct {
	web                  *websim.Web
	srv                  *websim.Server
	truth                websim.Truth
	delay, timeout       time.Duration
	seeds                string
	trawler, prof, colly string
	natsURL, redisAddr   string
	extra                []string // more trawler flags, for tuning experiments
	keepLogs             bool     // write each run's request log to requests.tsv
	profileAll           string   // cluster services to profile in every run
	wgetFor              time.Duration
	tmp                  string
	log                  io.Writer
	caseName             string // the case being run, for the runs' directories
	settle               time.Duration
}

// A case is one web, one delay and the modes crawled on it.
type benchCase struct {
	name  string // "main", "polite", "few-6", ...
	cfg   websim.Config
	delay time.Duration
	modes []string
	runs  int
}

// caseResults are the runs of one case and the web they crawled.
type caseResults struct {
	benchCase
	web     websim.Config
	truth   websim.Truth
	results []result
}

// result is one crawl: what it cost and what the server saw.
type result struct {
	mode   string
	run    int
	m      measured
	audit  websim.Audit
	rate   []float64 // pages/s per second of the crawl
	phases phases
	rss    []float64 // MiB summed over the crawler's processes, every rssEvery
	// rssAt is the RSS (MiB) when the crawl had requested 25, 50 and 100 %
	// of the URLs it requested, from the server's log.
	rssAt [3]float64
	load  float64 // the machine's 1-minute load average at the end
}

// rssEvery is how often the crawler's resident memory is read.
const rssEvery = 500 * time.Millisecond

func (r result) pagesPerSec() float64 { return float64(r.audit.Fetched) / r.m.wall.Seconds() }
func (r result) cpuPer1k() float64 {
	return r.m.cpu.Seconds() * 1000 / max(float64(r.audit.Fetched), 1)
}

// pagesPerCPUSec is pages per CPU-second of the crawler, NATS and Redis
// included for the services.
func (r result) pagesPerCPUSec() float64 {
	return float64(r.audit.Fetched) / max((r.m.cpu+r.m.serverCPU).Seconds(), 1e-3)
}

// writtenPerPage is bytes written per page by the crawler's processes and,
// for the services, NATS and Redis.
func (r result) writtenPerPage() float64 {
	return float64(r.m.written+r.m.serverWritten) / max(float64(r.audit.Fetched), 1)
}

func main() {
	var cfg websim.Config
	var h harness
	var runs, scaleRuns, extraRuns int
	var web, modes, extraModes, polite, few, scale, md, doc, img, repo, trawlerBin, profBin string
	var politeDelay time.Duration
	var profile bool
	var extra, profileAll, docs string
	flag.StringVar(&web, "web", "discovery", "the web: discovery (one seed, named hosts, links in every form, text pages) or seeded (every home page a seed, IP hosts, simple hrefs: the first benchmarks' web)")
	flag.Uint64Var(&cfg.Seed, "web-seed", 1, "seed of the synthetic web")
	flag.IntVar(&cfg.Hosts, "hosts", 20, "hosts of the web")
	flag.IntVar(&cfg.Pages, "pages", 50, "pages per host")
	flag.IntVar(&cfg.Port, "port", 0, "port of every host (0: 80 on a discovery web when it can be bound, so that http://host:80/ is the same URL, else 18080)")
	flag.IntVar(&cfg.Block, "block", 1, "second octet of the hosts' loopback addresses (127.B.x.y)")
	flag.DurationVar(&cfg.Latency, "latency", 0, "median response latency of a host")
	flag.Float64Var(&cfg.Failing, "failing", 0, "share of the main case's hosts that fail, half down (connection refused), half hanging (never answer); never the seed's")
	flag.DurationVar(&h.delay, "delay", 100*time.Millisecond, "politeness delay (per host, after each response) for every crawler")
	flag.DurationVar(&h.timeout, "timeout", 30*time.Minute, "give up on a crawl after this long")
	flag.IntVar(&runs, "runs", 3, "runs of each mode (interleaved); medians are reported")
	flag.StringVar(&modes, "modes", "run,run-out,run-warc,cluster,cluster-warc,cluster-fp,colly,wget", "modes to measure: run, run-out, run-warc, cluster, cluster-warc, cluster-fp (fetchers --with-parser, no parser process), colly, wget")
	flag.StringVar(&polite, "polite", "20x150", "politeness-bound case: hosts x pages crawled with -polite-delay (empty: skip)")
	flag.DurationVar(&politeDelay, "polite-delay", 100*time.Millisecond, "delay of the politeness-bound case")
	flag.StringVar(&few, "few", "1x600,6x300,6x300@5ms", "few-hosts cases without a delay: hosts x pages, @ the hosts' median time to answer when not at once, comma-separated (empty: skip)")
	flag.StringVar(&extraModes, "extra-modes", "run-out,cluster,colly,wget", "modes of the politeness-bound and few-hosts cases")
	flag.StringVar(&docs, "docs", "", "real-pages case without a delay: directories of HTML documentation, comma-separated, each served as one host with its home page a seed (bench/scripts/doc-trees.sh fetches six; empty: skip)")
	flag.IntVar(&extraRuns, "extra-runs", 1, "runs of each mode in the politeness-bound and few-hosts cases")
	flag.DurationVar(&h.wgetFor, "wget-for", time.Minute, "stop the wget mode after this long (it fetches one URL at a time: a large web takes hours)")
	flag.StringVar(&scale, "scale", "1,2,4", "fetcher and parser replicas for the scaling runs (empty: skip)")
	flag.IntVar(&scaleRuns, "scale-runs", 1, "runs per scaling point")
	flag.BoolVar(&profile, "profile", true, "CPU-profile the all-in-one mode and the hottest cluster service")
	flag.StringVar(&profileAll, "profile-services", "", "CPU-profile these cluster services (comma-separated, e.g. parser,fetcher) in every cluster run; the profiles stay in the run's directory")
	flag.StringVar(&h.natsURL, "nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS server for the cluster mode")
	flag.StringVar(&h.redisAddr, "redis", envOr("REDIS_ADDR", "127.0.0.1:6379"), "Redis for the cluster mode")
	flag.StringVar(&repo, "repo", "..", "root of the trawler repository")
	flag.StringVar(&extra, "trawler-flags", "", "extra flags for every trawler process, space-separated (e.g. \"--partition-count 8\")")
	flag.StringVar(&trawlerBin, "trawler-bin", "", "use this trawler binary instead of building ./cmd/trawler")
	flag.StringVar(&profBin, "prof-bin", "", "use this trawlerprof binary instead of building ./cmd/trawlerprof")
	flag.BoolVar(&h.keepLogs, "request-logs", false, "write every run's server-side request log to requests.tsv in its directory (host, path, status, start and end in ms since the run's start)")
	flag.StringVar(&md, "md", "", "also write the report (Markdown) to this file")
	flag.StringVar(&doc, "doc", "", "replace the part of this Markdown file between <!-- e2e:begin --> and <!-- e2e:end --> with the report")
	flag.StringVar(&img, "img", "", "write plots (SVG and PNG) into this directory (empty: no plots)")
	flag.Parse()

	h.extra = strings.Fields(extra)
	h.profileAll = profileAll
	cases, err := buildCases(web, cfg, h.delay, runs, split(modes), polite, politeDelay, few, extraRuns, split(extraModes))
	if err == nil && docs != "" {
		var c benchCase
		c, err = docsCase(split(docs), cases[0].cfg, extraRuns, split(extraModes))
		cases = append(cases, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := h.main(ctx, cases, scaleRuns, split(scale), profile, repo, md, doc, img, trawlerBin, profBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}

// buildCases is the main case and the extra ones the flags ask for.
func buildCases(web string, cfg websim.Config, delay time.Duration, runs int, modes []string, polite string, politeDelay time.Duration,
	few string, extraRuns int, extraModes []string) ([]benchCase, error) {
	switch web {
	case "discovery":
		cfg.Discovery = true
	case "seeded":
	default:
		return nil, fmt.Errorf("-web %q: discovery or seeded", web)
	}
	if cfg.Port == 0 {
		cfg.Port = 18080
		if cfg.Discovery && canListen(fmt.Sprintf("127.%d.1.1:80", max(cfg.Block, 1))) {
			cfg.Port = 80
		}
	}
	for _, m := range append(append([]string{}, modes...), extraModes...) {
		if !contains(allModes, m) {
			return nil, fmt.Errorf("unknown mode %q (modes: %s)", m, strings.Join(allModes, ", "))
		}
	}
	cases := []benchCase{{name: "main", cfg: cfg, delay: delay, modes: modes, runs: runs}}
	sized := func(name, spec string, d time.Duration) error {
		size, latency, slow := strings.Cut(spec, "@")
		hosts, pages, ok := strings.Cut(size, "x")
		c := cfg
		var err1, err2, err3 error
		c.Hosts, err1 = strconv.Atoi(hosts)
		c.Pages, err2 = strconv.Atoi(pages)
		caseName := fmt.Sprintf("%s-%d", name, c.Hosts)
		if slow {
			// Hosts that take a while to answer leave the cores idle
			// between pages: the gap is then the crawler's own latency,
			// not its wait for a core.
			c.Latency, err3 = time.ParseDuration(latency)
			caseName += "@" + latency
		}
		if !ok || err1 != nil || err2 != nil || err3 != nil || c.Hosts < 1 || c.Pages < 1 || c.Latency < 0 {
			return fmt.Errorf("%s case %q: want HOSTSxPAGES or HOSTSxPAGES@LATENCY (e.g. 6x300@5ms)", name, spec)
		}
		c.SeedHosts, c.Failing = 0, 0
		cases = append(cases, benchCase{name: caseName, cfg: c, delay: d, modes: extraModes, runs: extraRuns})
		return nil
	}
	if polite != "" {
		if err := sized("polite", polite, politeDelay); err != nil {
			return nil, err
		}
	}
	for _, f := range split(few) {
		if err := sized("few", f, 0); err != nil {
			return nil, err
		}
	}
	return cases, nil
}

// docsCase is the real-pages case: each directory a host serving its files
// (websim's files web), its home page a seed, no delay.
func docsCase(dirs []string, main websim.Config, runs int, modes []string) (benchCase, error) {
	cfg := websim.Config{Port: main.Port, Block: main.Block}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return benchCase{}, fmt.Errorf("-docs: %w", err)
		}
		if fi, err := os.Stat(filepath.Join(abs, "index.html")); err != nil || fi.IsDir() {
			return benchCase{}, fmt.Errorf("-docs: %s has no index.html: give the directories that hold each tree's home page", d)
		}
		cfg.Dirs = append(cfg.Dirs, abs)
	}
	return benchCase{name: "docs", cfg: cfg, modes: modes, runs: runs}, nil
}

var allModes = []string{"run", "run-out", "run-warc", "cluster", "cluster-warc", "cluster-fp", "colly", "wget"}

// canListen reports whether this process may listen on addr (port 80 needs
// root or CAP_NET_BIND_SERVICE).
func canListen(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
	}
	return err == nil
}

func (h *harness) main(ctx context.Context, cases []benchCase, scaleRuns int, scale []string, profile bool, repo, md, doc, img, trawlerBin, profBin string) error {
	bench, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := h.build(ctx, repo, bench, trawlerBin, profBin, profile); err != nil {
		return err
	}
	var all []caseResults
	var scaling []result
	var profiles []string
	for ci, c := range cases {
		if err := h.serve(c.cfg, c.delay); err != nil {
			return err
		}
		h.caseName = c.name
		w := h.web.Config()
		fmt.Fprintf(h.log, "e2e: case %s: web of %d hosts x %d pages (%s, port %d), delay %s, truth %d URLs (%d pages, %d redirects, %d 404s), %d disallowed links, %d links to %d failing hosts\n",
			c.name, w.Hosts, w.Pages, webKind(w), w.Port, c.delay, len(h.truth.URLs), h.truth.Pages, h.truth.Redirects, h.truth.NotFound, h.truth.Disallowed, h.truth.OnFailing, h.truth.FailingHosts)
		cr := caseResults{benchCase: c, web: w, truth: h.truth}
		for i := range c.runs {
			for _, mode := range c.modes {
				r, err := h.crawl(ctx, mode, i, 1, 1, "")
				if err != nil {
					h.srv.Close()
					return err
				}
				cr.results = append(cr.results, r)
			}
		}
		if ci == 0 {
			if scaling, err = h.scaling(ctx, scale, scaleRuns); err == nil && profile {
				profiles, err = h.profiles(ctx, c.modes, scaling)
			}
			if err != nil {
				h.srv.Close()
				return err
			}
		}
		h.srv.Close()
		all = append(all, cr)
	}
	var plots []string
	if img != "" {
		if plots, err = drawPlots(img, all[0].results, scaling); err != nil {
			return err
		}
	}
	report := h.report(all, scaling, profiles, plots, scaleRuns)
	fmt.Print(report)
	if md != "" {
		if err := os.WriteFile(md, []byte(report), 0o644); err != nil {
			return err
		}
	}
	if doc != "" {
		return mddoc.Replace(doc, "e2e", report)
	}
	return nil
}

func (h *harness) scaling(ctx context.Context, scale []string, scaleRuns int) ([]result, error) {
	var scaling []result
	for _, s := range scale {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-scale %q: want replica counts", s)
		}
		for i := range scaleRuns {
			r, err := h.crawl(ctx, "cluster", i, n, n, "")
			if err != nil {
				return nil, err
			}
			r.mode = fmt.Sprintf("cluster x%d", n)
			scaling = append(scaling, r)
		}
	}
	return scaling, nil
}

func webKind(c websim.Config) string {
	if len(c.Dirs) > 0 {
		return "files"
	}
	if c.Discovery {
		return "discovery"
	}
	return "seeded"
}

// build compiles the binaries (unless given) into a new temporary
// directory, where the runs keep their logs.
func (h *harness) build(ctx context.Context, repo, bench, trawlerBin, profBin string, profile bool) error {
	if h.log == nil {
		h.log = os.Stderr
	}
	var err error
	if h.tmp, err = os.MkdirTemp("", "trawler-e2e-"); err != nil {
		return err
	}
	fmt.Fprintf(h.log, "e2e: logs and profiles under %s\n", h.tmp)
	h.trawler, h.prof, h.colly = filepath.Join(h.tmp, "trawler"), filepath.Join(h.tmp, "trawlerprof"), filepath.Join(h.tmp, "collycrawl")
	if trawlerBin != "" {
		h.trawler = trawlerBin
	} else if err := build(ctx, repo, "./cmd/trawler", h.trawler); err != nil {
		return err
	}
	if err := build(ctx, bench, "./cmd/collycrawl", h.colly); err != nil {
		return err
	}
	if profBin != "" {
		h.prof = profBin
	} else if profile || h.profileAll != "" {
		if err := build(ctx, bench, "./cmd/trawlerprof", h.prof); err != nil {
			return err
		}
	}
	return nil
}

// serve serves the web of cfg and writes its seeds file; the caller closes
// h.srv.
func (h *harness) serve(cfg websim.Config, delay time.Duration) error {
	var err error
	if h.web, err = websim.New(cfg); err != nil {
		return err
	}
	h.delay = delay
	h.truth = h.web.Truth()
	if h.srv, err = websim.Serve(h.web); err != nil {
		return err
	}
	h.seeds = filepath.Join(h.tmp, fmt.Sprintf("seeds-%d.txt", time.Now().UnixNano()))
	if err := os.WriteFile(h.seeds, []byte(strings.Join(h.web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		h.srv.Close()
		return err
	}
	return nil
}

// setup builds the binaries and serves the web of cfg (for tests).
func (h *harness) setup(ctx context.Context, cfg websim.Config, repo, bench, trawlerBin, profBin string, profile bool) error {
	if err := h.build(ctx, repo, bench, trawlerBin, profBin, profile); err != nil {
		return err
	}
	return h.serve(cfg, h.delay)
}

// crawl runs one mode once on a fresh server log.
func (h *harness) crawl(ctx context.Context, mode string, run, fetchers, parsers int, profile string) (result, error) {
	name := fmt.Sprintf("%s-f%dp%d-%d%s", mode, fetchers, parsers, run, profile)
	if h.caseName != "" && h.caseName != "main" {
		name = h.caseName + "-" + name
	}
	dir, err := mkdir(h.tmp, name)
	if err != nil {
		return result{}, err
	}
	if h.settle == 0 {
		h.settle = 2 * time.Second
	}
	time.Sleep(h.settle) // let the previous crawl's sockets and the machine settle
	h.srv.Reset()
	start, self0 := time.Now(), selfCPU()
	stopRSS := make(chan struct{})
	rss := sampleRSS(rssEvery, stopRSS)
	var m measured
	switch mode {
	case "run", "run-out", "run-warc":
		m, err = h.runAllInOne(ctx, dir, profile, strings.TrimPrefix(strings.TrimPrefix(mode, "run"), "-"))
	case "cluster", "cluster-warc", "cluster-fp":
		m, err = h.runCluster(ctx, dir, fetchers, parsers, profile, mode == "cluster-warc", mode == "cluster-fp")
	case "colly":
		m, err = h.runColly(ctx, dir)
	case "wget":
		m, err = h.runWget(ctx, dir)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	close(stopRSS)
	rssSeries := <-rss
	for len(rssSeries) > 0 && rssSeries[len(rssSeries)-1] == 0 {
		rssSeries = rssSeries[:len(rssSeries)-1] // read after the processes exited
	}
	if err != nil {
		return result{}, err
	}
	m.webCPU = selfCPU() - self0
	log := h.srv.Log()
	r := result{mode: mode, run: run, m: m, audit: h.web.Judge(h.truth, log, h.srv.MaxConcurrent, h.delay),
		rate: websim.Throughput(log, start, time.Second), rss: rssSeries, load: loadAvg()}
	r.rssAt = rssAtProgress(log, start, rssSeries, rssEvery)
	a := r.audit
	if a.Duplicates > 0 {
		if err := writeDuplicates(filepath.Join(dir, "duplicates.txt"), h.web, log); err != nil {
			return result{}, err
		}
	}
	r.phases = phasesOf(log, start)
	if h.keepLogs {
		if err := writeRequests(filepath.Join(dir, "requests.tsv"), log, start); err != nil {
			return result{}, err
		}
	}
	fmt.Fprintf(h.log, "e2e: %-12s f%d p%d run %d: %6.1f pages/s, %.0f pages/CPU-s, RSS %s (at 25/50/100%%: %.0f/%.0f/%.0f MiB), %.1f KB written/page (%.1f KB the outputs), fsyncs %s, "+
		"completeness %.2f%%, %d dup (%d aliases), %d robots violations, max conc %d, min gap %s, mean gap %s, median gap %s, %d gaps < delay (%d certain), wall %s (%s; CPU s: crawler %.1f, NATS %.1f, Redis %.1f, web server %.1f)\n",
		mode, fetchers, parsers, run, r.pagesPerSec(), r.pagesPerCPUSec(), mib(m.rss), r.rssAt[0], r.rssAt[1], r.rssAt[2], r.writtenPerPage()/1000, float64(m.outputs)/max(float64(a.Fetched), 1)/1000, fsyncText(r),
		100*a.Completeness(), a.Duplicates, a.Aliases, a.Violations,
		a.MaxConcurrent, a.MinGapPages.Round(time.Microsecond), a.MeanGapPages.Round(time.Millisecond), a.MedianGapPages.Round(100*time.Microsecond),
		a.GapsBelow, a.Breaches, m.wall.Round(time.Millisecond), r.phases,
		m.cpu.Seconds(), m.natsCPU.Seconds(), (m.serverCPU - m.natsCPU).Seconds(), m.webCPU.Seconds())
	if a.ToFailing > 0 {
		fmt.Fprintf(h.log, "e2e: %-12s run %d: %d requests of pages of hosts whose robots.txt never came (hanging hosts)\n", mode, run, a.ToFailing)
	}
	if len(a.MissingSample) > 0 {
		fmt.Fprintf(h.log, "e2e: %-12s run %d: %d URLs of the truth not requested, e.g. %s\n", mode, run, a.Missing, strings.Join(a.MissingSample, " "))
	}
	return r, nil
}

// rssAtProgress reads the RSS series at the moments the crawl had made 25,
// 50 and 100 % of its page requests (robots.txt left out), from the
// server's log: comparable across crawlers of different speeds.
func rssAtProgress(log [][]websim.Request, start time.Time, rss []float64, every time.Duration) [3]float64 {
	var at []time.Duration
	for _, reqs := range log {
		for _, r := range reqs {
			if r.Path != "/robots.txt" {
				at = append(at, r.Start.Sub(start))
			}
		}
	}
	var out [3]float64
	if len(at) == 0 || len(rss) == 0 {
		return out
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	for i, f := range []float64{0.25, 0.5, 1} {
		t := at[max(0, int(f*float64(len(at)))-1)]
		// Sample k is read at (k+1) x every: take the first one after t,
		// or the last one read while the processes ran.
		k := min(max(0, int(t/every)), len(rss)-1)
		for k > 0 && rss[k] == 0 {
			k--
		}
		out[i] = rss[k]
	}
	return out
}

// profiles CPU-profiles the all-in-one mode and, at the largest scaling
// point, the cluster service that used the most CPU; returns the top of
// each profile.
func (h *harness) profiles(ctx context.Context, modes []string, scaling []result) ([]string, error) {
	var out []string
	top := func(title, file string) error {
		cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", file)
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("pprof %s: %v\n%s", file, err, b)
		}
		out = append(out, title+"\n\n```\n"+strings.TrimSpace(string(b))+"\n```\n")
		return nil
	}
	if contains(modes, "run") {
		r, err := h.crawl(ctx, "run", 0, 1, 1, "run")
		if err != nil {
			return nil, err
		}
		if err := top(fmt.Sprintf("All-in-one `trawler run` (%.1f pages/s while profiled):", r.pagesPerSec()), filepath.Join(h.tmp, "run-f1p1-0run", "run.pprof")); err != nil {
			return nil, err
		}
	}
	if len(scaling) > 0 {
		last := scaling[len(scaling)-1]
		n, _ := strconv.Atoi(strings.TrimPrefix(last.mode, "cluster x"))
		hot, hotCPU := "", time.Duration(0)
		for svc, c := range last.m.perProc {
			if svc != "seed" && c > hotCPU {
				hot, hotCPU = svc, c
			}
		}
		r, err := h.crawl(ctx, "cluster", 0, n, n, hot)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(h.tmp, fmt.Sprintf("cluster-f%dp%d-0%s", n, n, hot))
		file := filepath.Join(dir, hot+".pprof")
		if matches, _ := filepath.Glob(filepath.Join(dir, hot+"*.pprof")); len(matches) > 0 {
			file = matches[0]
		}
		shares := cpuShares(last.m.perProc)
		if err := top(fmt.Sprintf("Hottest cluster service at %d fetchers + %d parsers: `%s` (CPU by service in that run: %s; %.1f pages/s while profiled). Profile of one %s process:",
			n, n, hot, shares, r.pagesPerSec(), hot), file); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func cpuShares(per map[string]time.Duration) string {
	var names []string
	for k := range per {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return per[names[i]] > per[names[j]] })
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f s", k, per[k].Seconds()))
	}
	return strings.Join(parts, ", ")
}

// writeDuplicates lists every URL requested more than once with the times
// of its requests relative to the first, for finding out why.
func writeDuplicates(file string, w *websim.Web, log [][]websim.Request) error {
	var b strings.Builder
	for h, reqs := range log {
		at := map[string][]websim.Request{}
		for _, r := range reqs {
			if r.Path != "/robots.txt" {
				at[r.Path] = append(at[r.Path], r)
			}
		}
		for path, rs := range at {
			if len(rs) < 2 {
				continue
			}
			sort.Slice(rs, func(i, j int) bool { return rs[i].Start.Before(rs[j].Start) })
			fmt.Fprintf(&b, "%s%s status %d at %s%s", w.Origin(h), path, rs[0].Status, rs[0].Start.Format("15:04:05.000"), spelt(rs[0]))
			for _, r := range rs[1:] {
				fmt.Fprintf(&b, ", again +%s (status %d)%s", r.Start.Sub(rs[0].Start).Round(time.Millisecond), r.Status, spelt(r))
			}
			b.WriteString("\n")
		}
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// spelt notes a request's target as sent when it differs from its URL's.
func spelt(r websim.Request) string {
	if r.Raw != "" && r.Raw != r.Path {
		return " as " + r.Raw
	}
	return ""
}

// loadAvg is the 1-minute load average: other jobs on a shared machine
// slow every mode, and the report says how busy it was.
func loadAvg() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	x, _ := strconv.ParseFloat(f[0], 64)
	return x
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
