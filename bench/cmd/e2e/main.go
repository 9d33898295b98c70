// Command e2e is the end-to-end crawl benchmark: on one synthetic web
// (bench/websim) served from this process, with one request at a time per
// host and the same politeness delay, it crawls with
//
//   - the all-in-one `trawler run` (embedded NATS, bbolt),
//   - the four services as separate processes against the machine's NATS
//     and Redis (`trawler dedup|frontier|fetcher|parser`, `seed`, `status --wait`),
//   - the Colly v2 baseline (bench/colly),
//
// several times, interleaved, and reports medians of pages/s, CPU seconds
// per 1,000 pages and peak RSS of the crawler's processes, with the
// server-side audit (completeness against the ground truth, duplicates,
// robots.txt violations, per-host concurrency and smallest gap). Then it
// scales fetcher and parser replicas, profiles the hottest service, and
// draws throughput plots.
//
//	cd bench && go run ./cmd/e2e -hosts 200 -pages 500 -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
}

// result is one crawl: what it cost and what the server saw.
type result struct {
	mode   string
	run    int
	m      measured
	audit  websim.Audit
	rate   []float64 // pages/s per second of the crawl
	phases phases
	rss    []float64 // MiB summed over the crawler's processes, per second
	load   float64   // the machine's 1-minute load average at the end
}

func (r result) pagesPerSec() float64 { return float64(r.audit.Fetched) / r.m.wall.Seconds() }
func (r result) cpuPer1k() float64 {
	return r.m.cpu.Seconds() * 1000 / max(float64(r.audit.Fetched), 1)
}

func main() {
	var cfg websim.Config
	var h harness
	var runs, scaleRuns int
	var modes, scale, md, doc, img, repo, trawlerBin, profBin string
	var profile bool
	var extra, profileAll string
	flag.Uint64Var(&cfg.Seed, "web-seed", 1, "seed of the synthetic web")
	flag.IntVar(&cfg.Hosts, "hosts", 20, "hosts of the web")
	flag.IntVar(&cfg.Pages, "pages", 50, "pages per host")
	flag.IntVar(&cfg.Port, "port", 18080, "port of every host")
	flag.DurationVar(&cfg.Latency, "latency", 0, "median response latency of a host")
	flag.DurationVar(&h.delay, "delay", 100*time.Millisecond, "politeness delay (per host, after each response) for every crawler")
	flag.DurationVar(&h.timeout, "timeout", 30*time.Minute, "give up on a crawl after this long")
	flag.IntVar(&runs, "runs", 3, "runs of each mode (interleaved); medians are reported")
	flag.StringVar(&modes, "modes", "run,cluster,colly,wget", "modes to measure: run, cluster, colly, wget")
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
	flag.StringVar(&img, "img", "", "write plots (SVG) into this directory (empty: no plots)")
	flag.Parse()

	h.extra = strings.Fields(extra)
	h.profileAll = profileAll
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := h.main(ctx, cfg, runs, scaleRuns, split(modes), split(scale), profile, repo, md, doc, img, trawlerBin, profBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}

func (h *harness) main(ctx context.Context, cfg websim.Config, runs, scaleRuns int, modes, scale []string, profile bool, repo, md, doc, img, trawlerBin, profBin string) error {
	bench, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := h.setup(ctx, cfg, repo, bench, trawlerBin, profBin, profile); err != nil {
		return err
	}
	defer h.srv.Close()
	c := h.web.Config()
	fmt.Fprintf(h.log, "e2e: web of %d hosts x %d pages, truth %d URLs (%d pages, %d redirects, %d 404s), %d disallowed links\n",
		c.Hosts, c.Pages, len(h.truth.URLs), h.truth.Pages, h.truth.Redirects, h.truth.NotFound, h.truth.Disallowed)

	var results []result
	for i := range runs {
		for _, mode := range modes {
			r, err := h.crawl(ctx, mode, i, 1, 1, "")
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	var scaling []result
	for _, s := range scale {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("-scale %q: want replica counts", s)
		}
		for i := range scaleRuns {
			r, err := h.crawl(ctx, "cluster", i, n, n, "")
			if err != nil {
				return err
			}
			r.mode = fmt.Sprintf("cluster x%d", n)
			scaling = append(scaling, r)
		}
	}
	var profiles []string
	if profile {
		if profiles, err = h.profiles(ctx, modes, scaling); err != nil {
			return err
		}
	}
	var plots []string
	if img != "" {
		if plots, err = drawPlots(img, results, scaling); err != nil {
			return err
		}
	}
	report := h.report(results, scaling, profiles, plots, runs, scaleRuns)
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

// setup builds the binaries (unless given), serves the web and writes the
// seeds file; the caller closes h.srv.
func (h *harness) setup(ctx context.Context, cfg websim.Config, repo, bench, trawlerBin, profBin string, profile bool) error {
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
	if h.web, err = websim.New(cfg); err != nil {
		return err
	}
	h.truth = h.web.Truth()
	if h.srv, err = websim.Serve(h.web); err != nil {
		return err
	}
	h.seeds = filepath.Join(h.tmp, "seeds.txt")
	if err := os.WriteFile(h.seeds, []byte(strings.Join(h.web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		h.srv.Close()
		return err
	}
	return nil
}

// crawl runs one mode once on a fresh server log.
func (h *harness) crawl(ctx context.Context, mode string, run, fetchers, parsers int, profile string) (result, error) {
	dir, err := mkdir(h.tmp, fmt.Sprintf("%s-f%dp%d-%d%s", mode, fetchers, parsers, run, profile))
	if err != nil {
		return result{}, err
	}
	time.Sleep(2 * time.Second) // let the previous crawl's sockets and the machine settle
	h.srv.Reset()
	start, self0 := time.Now(), selfCPU()
	stopRSS := make(chan struct{})
	rss := sampleRSS(time.Second, stopRSS)
	var m measured
	switch mode {
	case "run":
		m, err = h.runAllInOne(ctx, dir, profile)
	case "cluster":
		m, err = h.runCluster(ctx, dir, fetchers, parsers, profile)
	case "colly":
		m, err = h.runColly(ctx, dir)
	case "wget":
		m, err = h.runWget(ctx, dir)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	close(stopRSS)
	rssSeries := <-rss
	if err != nil {
		return result{}, err
	}
	m.webCPU = selfCPU() - self0
	log := h.srv.Log()
	r := result{mode: mode, run: run, m: m, audit: h.web.Judge(h.truth, log, h.srv.MaxConcurrent, h.delay),
		rate: websim.Throughput(log, start, time.Second), rss: rssSeries, load: loadAvg()}
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
	fmt.Fprintf(h.log, "e2e: %-10s f%d p%d run %d: %6.1f pages/s, %.2f CPU s/1k pages, RSS %s, completeness %.2f%%, %d dup, %d robots violations, max conc %d, min gap %s, mean gap %s, %d gaps < delay (%d certain), wall %s (%s; CPU s: crawler %.1f, NATS %.1f, Redis %.1f, web server %.1f)\n",
		mode, fetchers, parsers, run, r.pagesPerSec(), r.cpuPer1k(), mib(m.rss), 100*a.Completeness(), a.Duplicates, a.Violations,
		a.MaxConcurrent, a.MinGapPages.Round(time.Microsecond), a.MeanGapPages.Round(time.Millisecond), a.GapsBelow, a.Breaches, m.wall.Round(time.Millisecond), r.phases,
		m.cpu.Seconds(), m.natsCPU.Seconds(), (m.serverCPU - m.natsCPU).Seconds(), m.webCPU.Seconds())
	return r, nil
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
			fmt.Fprintf(&b, "%s%s status %d at %s", w.Origin(h), path, rs[0].Status, rs[0].Start.Format("15:04:05.000"))
			for _, r := range rs[1:] {
				fmt.Fprintf(&b, ", again +%s (status %d)", r.Start.Sub(rs[0].Start).Round(time.Millisecond), r.Status)
			}
			b.WriteString("\n")
		}
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
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
