package main

import (
	"fmt"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/bench/internal/mddoc"
	"github.com/trawlerhq/trawler/bench/websim"
)

// report renders the results as the Markdown of docs/benchmarks.md's
// "End to end" section.
func (h *harness) report(cases []caseResults, scaling []result, profiles, plots []string, scaleRuns int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s UTC on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04"), mddoc.Machine())
	fmt.Fprintf(&b, "```sh\ncd bench && go run ./cmd/e2e %s\n```\n\n", strings.Join(os.Args[1:], " "))
	var all []result
	for i, c := range cases {
		all = append(all, c.results...)
		switch {
		case i == 0 && len(c.results) > 0: // -modes "": the extra cases alone
			mainTables(&b, c, h.wgetFor)
		case strings.HasPrefix(c.name, "polite"):
			politeTable(&b, c)
		case c.name == "docs":
			docsTable(&b, c)
		}
	}
	if few := fewCases(cases); len(few) > 0 {
		fewTable(&b, few)
	}
	lo, hi := 0.0, 0.0
	for _, r := range append(all, scaling...) {
		if lo == 0 || r.load < lo {
			lo = r.load
		}
		hi = max(hi, r.load)
	}
	fmt.Fprintf(&b, "Load average (1 min) at the end of the runs: %.1f–%.1f on %d CPUs.\n\n", lo, hi, runtime.NumCPU())
	if len(scaling) > 0 {
		fmt.Fprintf(&b, "Scaling, cluster mode on the same web (%d run(s) per point; CPU s by service, summed over replicas):\n\n", scaleRuns)
		b.WriteString("| fetchers = parsers | pages/s | CPU s / 1k pages | CPU by service | completeness | duplicates | max in flight / host |\n|---:|---:|---:|---|---:|---:|---:|\n")
		for _, mode := range order(scaling) {
			rs := byMode(scaling, mode)
			w := worst(rs)
			fmt.Fprintf(&b, "| %s | %.1f | %.2f | %s | %.2f %% | %d | %d |\n", strings.TrimPrefix(mode, "cluster x"),
				medianOf(rs, result.pagesPerSec), medianOf(rs, result.cpuPer1k), cpuShares(rs[0].m.perProc),
				100*w.audit.Completeness(), w.audit.Duplicates, w.audit.MaxConcurrent)
		}
		b.WriteString("\n")
	}
	for _, p := range plots {
		fmt.Fprintf(&b, "![%s](img/%s)\n\n", strings.TrimSuffix(p, ".svg"), p)
	}
	for _, p := range profiles {
		b.WriteString(p + "\n")
	}
	return b.String()
}

// describeWeb is the sentence that says what a case crawled.
func describeWeb(c caseResults) string {
	w, t := c.web, c.truth
	kind := fmt.Sprintf("seeded web: every home page a seed, hosts by address (127.%d.x.y:%d), simple hrefs", w.Block, w.Port)
	if w.Discovery {
		kind = fmt.Sprintf("discovery web: one seed (`http://site0.test%s/`), the other hosts found by following links; "+
			"hosts named `siteN.test` (the web's DNS server), each on its own loopback address, port %d; links written in every form pages use", portSuffix(w.Port), w.Port)
	}
	if w.Failing > 0 {
		kind += fmt.Sprintf("; %.0f %% of the hosts fail (%d of them linked), half down (connection refused), half hanging (never answering): "+
			"their %d linked URLs are not in the truth, robots.txt unreachable", 100*w.Failing, t.FailingHosts, t.OnFailing)
	}
	if w.Latency > 0 {
		kind += fmt.Sprintf("; each host answers after a latency of its own around %s (log-normal)", w.Latency)
	}
	return fmt.Sprintf("%d hosts × %d pages (seed %d), %s; ground truth %d URLs (%d pages, %d redirects, %d 404s; %d linked URLs disallowed by robots.txt). "+
		"Every crawler: one request at a time per host, %s after each response, robots.txt obeyed",
		w.Hosts, w.Pages, w.Seed, kind, len(t.URLs), t.Pages, t.Redirects, t.NotFound, t.Disallowed, c.delay)
}

func portSuffix(p int) string {
	if p == 80 {
		return ""
	}
	return ":" + strconv.Itoa(p)
}

// mainTables are the main case's two tables: speed and cost, then the audit.
func mainTables(b *strings.Builder, c caseResults, wgetFor time.Duration) {
	rs := c.results
	fmt.Fprintf(b, "**Web**: %s. Medians of %d interleaved run(s); the audit columns are the worst run.\n\n", describeWeb(c), c.runs)
	modes := order(rs)
	colly := medianOf(byMode(rs, "colly"), result.pagesPerSec)
	b.WriteString("| crawler | pages/s | vs Colly | pages / CPU-s | peak RSS | RSS at 25 / 50 / 100 % of the crawl | disk written / page | store commits / page | completeness | duplicates (aliases) | max in flight / host |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range modes {
		ms := byMode(rs, mode)
		rate := medianOf(ms, result.pagesPerSec)
		ratio := "–"
		if colly > 0 && mode != "colly" {
			ratio = fmt.Sprintf("%.2f ×", rate/colly)
			if lo, hi := pairedRatios(rs, mode); hi > 0 && len(ms) > 1 {
				ratio = fmt.Sprintf("**%.2f ×** (%.2f–%.2f)", rate/colly, lo, hi)
			} else {
				ratio = fmt.Sprintf("**%.2f ×**", rate/colly)
			}
		}
		w := worst(ms)
		perCPU := fmt.Sprintf("%.0f", medianOf(ms, result.pagesPerCPUSec))
		written := kb(medianOf(ms, func(r result) float64 { return float64(r.m.written) / max(float64(r.audit.Fetched), 1) }))
		if outs := medianOf(ms, func(r result) float64 { return float64(r.m.outputs) / max(float64(r.audit.Fetched), 1) }); outs > 0 {
			written += fmt.Sprintf(" (%s the outputs)", kb(outs))
		}
		if isCluster(mode) {
			perCPU += " (NATS, Redis in)"
			written += fmt.Sprintf(" (+%s NATS, Redis)", kb(medianOf(ms, func(r result) float64 {
				return float64(r.m.serverWritten) / max(float64(r.audit.Fetched), 1)
			})))
		}
		rssAt := fmt.Sprintf("%.0f / %.0f / %.0f MiB", medianOf(ms, func(r result) float64 { return r.rssAt[0] }),
			medianOf(ms, func(r result) float64 { return r.rssAt[1] }), medianOf(ms, func(r result) float64 { return r.rssAt[2] }))
		fmt.Fprintf(b, "| %s | %.1f | %s | %s | %s | %s | %s | %s | %.2f %% | %d (%d) | %d |\n",
			label(mode), rate, ratio, perCPU, mib(int64(medianOf(ms, func(r result) float64 { return float64(r.m.rss) }))), rssAt,
			written, fsyncText(ms[0]), 100*w.audit.Completeness(), w.audit.Duplicates, w.audit.Aliases, w.audit.MaxConcurrent)
	}
	b.WriteString("\nThe audit and where the time went (worst run; phases of the median run):\n\n")
	b.WriteString("| crawler | robots violations | min gap | mean gap | gaps < delay (certain) | first request | median host done | last host done | wall |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range modes {
		ms := byMode(rs, mode)
		w := worst(ms)
		p := medianRun(ms).phases
		r10 := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
		fmt.Fprintf(b, "| %s | %d | %s | %s | %d (%d) | %s | %s | %s | %s |\n", label(mode), w.audit.Violations,
			w.audit.MinGapPages.Round(10*time.Microsecond),
			time.Duration(medianOf(ms, func(r result) float64 { return float64(r.audit.MeanGapPages) })).Round(time.Millisecond),
			w.audit.GapsBelow, w.audit.Breaches, r10(p.first), r10(p.medianHostDone), r10(p.lastHostDone), medianRun(ms).m.wall.Round(10*time.Millisecond))
	}
	if ws := byMode(rs, "wget"); len(ws) > 0 {
		rate := medianOf(ws, result.pagesPerSec)
		fmt.Fprintf(b, "\nWget fetches one URL at a time over the whole web, with `--wait %s` between any two requests (as polite as the others, "+
			"per host and overall). It is stopped after %s; its completeness is what it reached by then, and at %.1f pages/s the whole web takes %s.\n",
			c.delay, wgetFor, rate, time.Duration(float64(len(c.truth.URLs))/max(rate, 1e-9)*float64(time.Second)).Round(time.Second))
	}
	b.WriteString("\nPer run (pages/s): ")
	for _, mode := range modes {
		var xs []string
		for _, r := range byMode(rs, mode) {
			xs = append(xs, fmt.Sprintf("%.1f", r.pagesPerSec()))
		}
		fmt.Fprintf(b, "%s %s; ", mode, strings.Join(xs, ", "))
	}
	b.WriteString("\n\n")
}

// politeTable: how close each crawler comes to hosts / delay, the most a
// crawler that costs nothing could fetch at one request per host, and to
// the web's own bound: its largest host's requests (robots.txt, pages,
// redirects, 404s) one delay apart, the host found at the start.
func politeTable(b *strings.Builder, c caseResults) {
	limit := float64(c.web.Hosts) / c.delay.Seconds()
	largest := largestHost(c.truth)
	fmt.Fprintf(b, "**Politeness-bound** (%s; %d run(s), medians): the limit is hosts / delay = %.0f pages/s, "+
		"less what discovery costs at the start (one host known) and the tail (the last hosts' queues).", describeWeb(c), c.runs, limit)
	if largest > 0 {
		fmt.Fprintf(b, " The web's own bound is tighter: its largest host has %d URLs, which with its robots.txt take at least %s "+
			"one delay apart however early the host is found; the last column is pages/s against the URLs of the truth over that time.", largest,
			time.Duration(largest)*c.delay)
	}
	b.WriteString("\n\n")
	b.WriteString("| crawler | pages/s | share of the limit | share of the web's bound | mean gap | median gap | completeness | duplicates (aliases) | max in flight / host | certain breaches |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range order(c.results) {
		ms := byMode(c.results, mode)
		w := worst(ms)
		rate := medianOf(ms, result.pagesPerSec)
		bound := "–"
		if largest > 0 {
			bound = fmt.Sprintf("%.0f %%", 100*rate/(float64(len(c.truth.URLs))/(float64(largest)*c.delay.Seconds())))
		}
		fmt.Fprintf(b, "| %s | %.1f | %.0f %% | %s | %s | %s | %.2f %% | %d (%d) | %d | %d |\n", label(mode), rate, 100*rate/limit, bound,
			time.Duration(medianOf(ms, func(r result) float64 { return float64(r.audit.MeanGapPages) })).Round(time.Millisecond),
			time.Duration(medianOf(ms, func(r result) float64 { return float64(r.audit.MedianGapPages) })).Round(time.Millisecond),
			100*w.audit.Completeness(), w.audit.Duplicates, w.audit.Aliases, w.audit.MaxConcurrent, w.audit.Breaches)
	}
	b.WriteString("\n")
}

// largestHost is how many URLs of the truth the largest host has (0: no truth).
func largestHost(t websim.Truth) int {
	per := map[string]int{}
	most := 0
	for raw := range t.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		per[u.Host]++
		most = max(most, per[u.Host])
	}
	return most
}

// docsTable: real documentation trees, a host each, no delay.
func docsTable(b *strings.Builder, c caseResults) {
	fmt.Fprintf(b, "**Real pages, no delay** (%d documentation trees served as %d hosts, each home page a seed: %s; ground truth %d URLs "+
		"found by following the pages' own links: %d served, %d redirects, %d 404s; %d run(s), medians). One request at a time per host; "+
		"the requests beyond the truth are what a crawler fetched that the pages' <a>, <area> and frames do not lead to (Wget: stylesheets, images).\n\n",
		len(c.web.Dirs), c.web.Hosts, strings.Join(c.web.Dirs, ", "), len(c.truth.URLs), c.truth.Pages, c.truth.Redirects, c.truth.NotFound, c.runs)
	colly := medianOf(byMode(c.results, "colly"), result.pagesPerSec)
	b.WriteString("| crawler | pages/s | vs Colly | pages / CPU-s | peak RSS | per-host turnaround (median) | mean gap | completeness | requests beyond the truth | duplicates (aliases) | max in flight / host |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range order(c.results) {
		ms := byMode(c.results, mode)
		w := worst(ms)
		rate := medianOf(ms, result.pagesPerSec)
		ratio := "–"
		if colly > 0 && mode != "colly" {
			ratio = fmt.Sprintf("**%.2f ×**", rate/colly)
		}
		fmt.Fprintf(b, "| %s | %.1f | %s | %.0f | %s | %s | %s | %.2f %% | %d | %d (%d) | %d |\n", label(mode), rate, ratio,
			medianOf(ms, result.pagesPerCPUSec), mib(int64(medianOf(ms, func(r result) float64 { return float64(r.m.rss) }))),
			time.Duration(medianOf(ms, func(r result) float64 { return float64(r.audit.MedianGapPages) })).Round(10*time.Microsecond),
			time.Duration(medianOf(ms, func(r result) float64 { return float64(r.audit.MeanGapPages) })).Round(10*time.Microsecond),
			100*w.audit.Completeness(), w.audit.Unknown, w.audit.Duplicates, w.audit.Aliases, w.audit.MaxConcurrent)
	}
	b.WriteString("\n")
}

func fewCases(cases []caseResults) []caseResults {
	var out []caseResults
	for _, c := range cases {
		if strings.HasPrefix(c.name, "few") {
			out = append(out, c)
		}
	}
	return out
}

// fewTable: with few hosts and no delay, a crawler's own turnaround per host
// (from the end of a response to its next request there, measured by the
// server) bounds its speed.
func fewTable(b *strings.Builder, cases []caseResults) {
	c0 := cases[0]
	fmt.Fprintf(b, "**Few hosts, no delay** (%s web, seed %d, %d run(s), medians): one request at a time per host and nothing between them, "+
		"so each crawler's own turnaround per host — the median time from the end of a response to its next request to the same host, "+
		"as the server saw it, beyond the politeness gap (here 0) — sets its speed once it runs; pages/s counts its start-up too "+
		"(the time to its first request is given). Where the hosts answer at once, a few hosts keep both cores busy and the gap is mostly "+
		"the crawler's wait for a core; where they take a few milliseconds to answer (\"answers in\", a log-normal median), the cores "+
		"have room and the gap is the crawler's own latency.\n\n", webKind(c0.web), c0.web.Seed, c0.runs)
	b.WriteString("| crawler | hosts × pages | pages/s | per-host turnaround (median) | mean gap | first request after | completeness | duplicates (aliases) | max in flight / host |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cases {
		for _, mode := range order(c.results) {
			ms := byMode(c.results, mode)
			w := worst(ms)
			turn := time.Duration(medianOf(ms, func(r result) float64 { return float64(r.audit.MedianGapPages - c.delay) }))
			size := fmt.Sprintf("%d × %d", c.web.Hosts, c.web.Pages)
			if c.web.Latency > 0 {
				size += fmt.Sprintf(", answers in ~%s", c.web.Latency)
			}
			fmt.Fprintf(b, "| %s | %s | %.1f | %s | %s | %s | %.2f %% | %d (%d) | %d |\n", label(mode), size,
				medianOf(ms, result.pagesPerSec), turn.Round(10*time.Microsecond),
				time.Duration(medianOf(ms, func(r result) float64 { return float64(r.audit.MeanGapPages) })).Round(10*time.Microsecond),
				medianRun(ms).phases.first.Round(10*time.Millisecond),
				100*w.audit.Completeness(), w.audit.Duplicates, w.audit.Aliases, w.audit.MaxConcurrent)
		}
	}
	b.WriteString("\n")
}

func isCluster(mode string) bool { return strings.HasPrefix(mode, "cluster") }

// fsyncText is a run's store commits per page, with --out checkpoints,
// from the crawler's /metrics; n/a where it exposes no such counter.
func fsyncText(r result) string {
	pages := max(float64(r.audit.Fetched), 1)
	commits, ok := r.m.counters["trawler_store_commits_total"]
	if !ok {
		switch {
		case isCluster(r.mode):
			return "n/a (Redis)"
		case r.mode == "colly" || r.mode == "wget":
			return "n/a (memory)"
		}
		return "n/a"
	}
	s := fmt.Sprintf("%.3f", commits/pages)
	if ck, ok := r.m.counters["trawler_out_checkpoints_total"]; ok {
		s += fmt.Sprintf(" (+%.3f --out)", ck/pages)
	}
	return s
}

func kb(bytes float64) string {
	switch {
	case bytes >= 1000:
		return fmt.Sprintf("%.1f KB", bytes/1000)
	case bytes > 0:
		return fmt.Sprintf("%.0f B", bytes)
	}
	return "0"
}

// medianRun is the run of median pages/s.
func medianRun(rs []result) result {
	s := append([]result(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].pagesPerSec() < s[j].pagesPerSec() })
	return s[len(s)/2]
}

func label(mode string) string {
	switch mode {
	case "run":
		return "Trawler all-in-one (`trawler run`)"
	case "run-out":
		return "Trawler all-in-one, `--out`"
	case "run-warc":
		return "Trawler all-in-one, `--archive` (WARC + JSON Lines)"
	case "cluster":
		return "Trawler services (4 processes, NATS + Redis)"
	case "cluster-warc":
		return "Trawler services + `trawler archive --out` (WARC + JSON Lines)"
	case "cluster-fp":
		return "Trawler services, `fetcher --with-parser` (3 processes, NATS + Redis)"
	case "colly":
		return "Colly v2 async"
	case "wget":
		return "GNU Wget, recursive (time-boxed, see below)"
	}
	return mode
}

func order(rs []result) []string {
	var modes []string
	for _, r := range rs {
		if !contains(modes, r.mode) {
			modes = append(modes, r.mode)
		}
	}
	return modes
}

func byMode(rs []result, mode string) []result {
	var out []result
	for _, r := range rs {
		if r.mode == mode {
			out = append(out, r)
		}
	}
	return out
}

func medianOf(rs []result, f func(result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return mddoc.Median(xs)
}

// pairedRatios is the range of mode/Colly pages/s over runs with the same
// index: each pair ran back to back, under the same background load.
func pairedRatios(rs []result, mode string) (lo, hi float64) {
	for _, r := range byMode(rs, mode) {
		for _, c := range byMode(rs, "colly") {
			if c.run == r.run && c.pagesPerSec() > 0 {
				x := r.pagesPerSec() / c.pagesPerSec()
				if lo == 0 || x < lo {
					lo = x
				}
				hi = max(hi, x)
			}
		}
	}
	return lo, hi
}

// worst folds the audits of several runs into their worst values.
func worst(rs []result) result {
	w := rs[0]
	for _, r := range rs[1:] {
		a, x := &w.audit, r.audit
		if x.Completeness() < a.Completeness() {
			a.Fetched, a.Missing = x.Fetched, x.Missing
		}
		a.Duplicates = max(a.Duplicates, x.Duplicates)
		a.Aliases = max(a.Aliases, x.Aliases)
		a.Violations = max(a.Violations, x.Violations)
		a.MaxConcurrent = max(a.MaxConcurrent, x.MaxConcurrent)
		a.GapsBelow = max(a.GapsBelow, x.GapsBelow)
		a.Breaches = max(a.Breaches, x.Breaches)
		if x.MinGapPages >= 0 && (a.MinGapPages < 0 || x.MinGapPages < a.MinGapPages) {
			a.MinGapPages = x.MinGapPages
		}
	}
	return w
}
