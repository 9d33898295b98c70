package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/bench/internal/mddoc"
)

// report renders the results as the Markdown of docs/benchmarks.md's
// "End to end" section.
func (h *harness) report(results, scaling []result, profiles, plots []string, runs, scaleRuns int) string {
	var b strings.Builder
	c := h.web.Config()
	fmt.Fprintf(&b, "Measured %s UTC on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04"), mddoc.Machine())
	fmt.Fprintf(&b, "```sh\ncd bench && go run ./cmd/e2e %s\n```\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "Web: %d hosts x %d pages (seed %d), each host on its own loopback address; ground truth %d URLs "+
		"(%d pages, %d redirects, %d 404s; %d linked URLs disallowed by robots.txt). Every crawler: one request at a time per host, "+
		"%s after each response, robots.txt obeyed. Medians of %d interleaved runs; the audit columns are the worst run.\n\n",
		c.Hosts, c.Pages, c.Seed, len(h.truth.URLs), h.truth.Pages, h.truth.Redirects, h.truth.NotFound, h.truth.Disallowed, h.delay, runs)

	modes := order(results)
	colly := medianOf(byMode(results, "colly"), result.pagesPerSec)
	b.WriteString("| mode | pages/s | vs Colly | CPU s / 1k pages | peak RSS | completeness | duplicates | robots violations | max concurrent / host | min gap | mean gap | gaps < delay (certain) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range modes {
		rs := byMode(results, mode)
		rate := medianOf(rs, result.pagesPerSec)
		ratio := "–"
		if colly > 0 {
			ratio = fmt.Sprintf("%.2f ×", rate/colly)
			if lo, hi := pairedRatios(results, mode); mode != "colly" && hi > 0 {
				ratio = fmt.Sprintf("**%.2f ×** (%.2f–%.2f)", rate/colly, lo, hi)
			}
		}
		w := worst(rs)
		cpu := fmt.Sprintf("%.2f", medianOf(rs, result.cpuPer1k))
		if mode == "cluster" {
			cpu += fmt.Sprintf(" (+%.2f NATS, Redis)", medianOf(rs, func(r result) float64 {
				return r.m.serverCPU.Seconds() * 1000 / max(float64(r.audit.Fetched), 1)
			}))
		}
		fmt.Fprintf(&b, "| %s | %.1f | %s | %s | %s | %.2f %% | %d | %d | %d | %s | %s | %d (%d) |\n",
			label(mode), rate, ratio, cpu, mib(int64(medianOf(rs, func(r result) float64 { return float64(r.m.rss) }))),
			100*w.audit.Completeness(), w.audit.Duplicates, w.audit.Violations, w.audit.MaxConcurrent,
			w.audit.MinGapPages.Round(10*time.Microsecond),
			time.Duration(medianOf(rs, func(r result) float64 { return float64(r.audit.MeanGapPages) })).Round(time.Millisecond), w.audit.GapsBelow, w.audit.Breaches)
	}
	if ws := byMode(results, "wget"); len(ws) > 0 {
		rate := medianOf(ws, result.pagesPerSec)
		fmt.Fprintf(&b, "\nWget fetches one URL at a time over the whole web, with `--wait %s` between any two requests (as polite as the others, "+
			"per host and overall). It is stopped after %s; its completeness is what it reached by then, and at %.1f pages/s the whole web takes %s.\n",
			h.delay, h.wgetFor, rate, time.Duration(float64(len(h.truth.URLs))/max(rate, 1e-9)*float64(time.Second)).Round(time.Second))
	}
	b.WriteString("\nPer run (pages/s): ")
	for _, mode := range modes {
		var xs []string
		for _, r := range byMode(results, mode) {
			xs = append(xs, fmt.Sprintf("%.1f", r.pagesPerSec()))
		}
		fmt.Fprintf(&b, "%s %s; ", mode, strings.Join(xs, ", "))
	}
	b.WriteString("\n\n")
	lo, hi := 0.0, 0.0
	for _, r := range append(append([]result{}, results...), scaling...) {
		if lo == 0 || r.load < lo {
			lo = r.load
		}
		hi = max(hi, r.load)
	}
	fmt.Fprintf(&b, "load average (1 min) at the end of the runs: %.1f–%.1f on %d CPUs.\n\n", lo, hi, runtime.NumCPU())
	if len(scaling) > 0 {
		fmt.Fprintf(&b, "Scaling, cluster mode (%d run(s) per point; CPU s by service, summed over replicas):\n\n", scaleRuns)
		b.WriteString("| fetchers = parsers | pages/s | CPU s / 1k pages | CPU by service | completeness | duplicates | max concurrent / host |\n|---:|---:|---:|---|---:|---:|---:|\n")
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

func label(mode string) string {
	switch mode {
	case "run":
		return "Trawler all-in-one (`trawler run`)"
	case "cluster":
		return "Trawler services (4 processes, NATS + Redis)"
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
