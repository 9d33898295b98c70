package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/bench/freshweb"
	"github.com/trawlerhq/trawler/bench/internal/mddoc"
)

// Goals of issue 21.
const (
	goalFreshness = 1.3 // adaptive / uniform freshness at equal bandwidth
	goalSaving    = 0.9 // 1 - bytes(with validators) / bytes(without), unchanged pages
)

// report renders the runs as Markdown: the web, a row per run, the theory
// and the goals.
func (o *options) report(runs []run) string {
	var b strings.Builder
	w := o.web
	static := max(w.Static, 0)
	fmt.Fprintf(&b, "Measured %s UTC on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04"), mddoc.Machine())
	fmt.Fprintf(&b, "```sh\ncd bench && go run ./cmd/freshness %s\n```\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "Web: %d hosts x %d pages (seed %d), %.0f %% never changing, the others changing on average every %s to %s (log-uniform), pages of %d bytes (median). "+
		"Bandwidth: one request per host per %s, %.1f pages/s; uniform interval %s. Each run %s, measured after %s.\n\n",
		w.Hosts, w.Pages, w.Seed, 100*static, w.ChangeMin, w.ChangeMax, w.BodySize,
		o.delay, float64(w.Hosts)/o.delay.Seconds(), o.interval, o.duration, o.warmup)
	b.WriteString("| policy | revisit interval | validators | requests | pages/s | freshness | age | freshness, changing pages | age, changing pages | unchanged fetches | bytes per unchanged fetch | 304 share | pages never fetched |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		s := r.res
		interval := r.min.String()
		if r.max != r.min {
			interval = r.min.String() + " – " + r.max.String()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %.2f | %.3f | %s | %.3f | %s | %d | %.0f | %.1f %% | %d |\n",
			r.mode, interval, map[bool]string{true: "ETag, Last-Modified", false: "none"}[r.validators],
			s.Requests, s.PerSecond, s.Freshness, dur(s.Age), s.ChangingFreshness, dur(s.ChangingAge),
			s.Unchanged(), s.BytesPerUnchanged(), 100*s.Share304(), s.NeverFetched)
	}
	b.WriteString("\n")
	for _, r := range runs {
		if r.stopped != "" {
			fmt.Fprintf(&b, "- %s: the crawler did not stop cleanly (%s).\n", r.mode, r.stopped)
		}
	}
	if u, ok := find(runs, "uniform"); ok {
		t := u.theory
		fmt.Fprintf(&b, "- Theory at the uniform run's %.2f pages/s (every page once per %s): uniform freshness %.3f, age %s; "+
			"the best any policy can do knowing every page's rate (Cho and Garcia-Molina's optimal allocation) %.3f, %.2f x uniform.\n",
			t.Bandwidth, dur(t.Interval), t.UniformFreshness, dur(t.UniformAge), t.OptimalFreshness, t.OptimalFreshness/max(t.UniformFreshness, 1e-9))
		if a, ok := find(runs, "adaptive"); ok {
			ratio := a.res.Freshness / max(u.res.Freshness, 1e-9)
			fmt.Fprintf(&b, "- Adaptive / uniform freshness: **%.2f x** (goal ≥ %.1f x: %s), over the changing pages %.2f x; age %.2f x; bandwidth %.2f x.\n",
				ratio, goalFreshness, verdict(ratio >= goalFreshness), a.res.ChangingFreshness/max(u.res.ChangingFreshness, 1e-9),
				a.res.Age.Seconds()/max(u.res.Age.Seconds(), 1e-9), a.res.PerSecond/max(u.res.PerSecond, 1e-9))
			if d := a.res.PerSecond/max(u.res.PerSecond, 1e-9) - 1; d < -0.05 || d > 0.05 {
				fmt.Fprintf(&b, "- The runs did not spend the same bandwidth (%+.0f %%): compare freshness per page fetched, or move -adaptive-min.\n", 100*d)
			}
		}
	}
	for _, p := range []string{"adaptive", "uniform"} {
		with, ok1 := find(runs, p)
		without, ok2 := find(runs, p+"-novalidators")
		if ok1 && ok2 {
			s := freshweb.Saving304(with.res, without.res)
			fmt.Fprintf(&b, "- 304 saving, %s: bytes per unchanged fetch %.0f with validators, %.0f without: **%.1f %%** saved (goal ≥ %.0f %%: %s).\n",
				p, with.res.BytesPerUnchanged(), without.res.BytesPerUnchanged(), 100*s, 100*goalSaving, verdict(s >= goalSaving))
		}
	}
	for _, r := range runs {
		if r.validators && r.res.Unchanged() > 0 {
			fmt.Fprintf(&b, "- %s, within the run: the unchanged fetches took %.1f %% fewer bytes than the same pages as 200s (%d of %d answered 304).\n",
				r.mode, 100*r.res.Saving(), r.res.Unchanged304, r.res.Unchanged())
		}
	}
	b.WriteString("\n")
	return b.String()
}

func find(runs []run, mode string) (run, bool) {
	for _, r := range runs {
		if r.mode == mode {
			return r, true
		}
	}
	return run{}, false
}

func verdict(ok bool) string {
	if ok {
		return "met ✔"
	}
	return "not met ✘"
}

// dur rounds a duration for the table.
func dur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
