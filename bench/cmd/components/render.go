package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

type header struct {
	when            time.Time
	took            time.Duration
	machine         string
	command, goTest string
	count           int
	load            [2]string
}

// render writes the report: how it was measured, the headline table, then
// every series in a collapsed block.
func render(r *results, h header) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s UTC on %s, in %s; load average (1 min) %s at the start, %s at the end.\n\n",
		h.when.UTC().Format("2006-01-02 15:04"), h.machine, h.took.Round(time.Second), h.load[0], h.load[1])
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", strings.TrimSpace(h.command))
	runs := fmt.Sprintf("the median of %d runs, the range their minimum and maximum", h.count)
	if h.count == 1 {
		runs = "from one run"
	}
	fmt.Fprintf(&b, "It runs `%s` in the product module; every figure is %s. "+
		"A ratio divides medians measured in the same run.\n\n", h.goTest, runs)

	b.WriteString("| component | measure | median | range | goal |\n|---|---|---:|---:|---|\n")
	for _, hl := range headlines {
		med, rng, goal := "not run", "", hl.Goal
		if v, lo, hi, ok := hl.value(r); ok {
			med, rng = num(v)+" "+hl.unit(), num(lo)+" – "+num(hi)
			if met, checked := hl.met(v); checked && met {
				goal += " ✔"
			} else if checked {
				goal += " ✘ not met"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", hl.Component, hl.What, med, rng, goal)
	}
	if len(r.Broken) > 0 {
		fmt.Fprintf(&b, "\n%d result line(s) did not parse and are missing above (a log line written into a result line?):\n\n", len(r.Broken))
		for _, e := range r.Broken {
			fmt.Fprintf(&b, "- `%s`\n", e)
		}
	}

	all := r.all()
	fmt.Fprintf(&b, "\n<details><summary>Every benchmark and metric (%d rows)</summary>\n\n", len(all))
	b.WriteString("| package | benchmark | unit | median | range | runs |\n|---|---|---|---:|---:|---:|\n")
	for _, s := range all {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s – %s | %d |\n", s.Pkg, s.Name, s.Unit, num(s.median()), num(s.min()), num(s.max()), len(s.Values))
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

// unit is how the row's figures are labelled.
func (hl headline) unit() string {
	switch {
	case hl.Show != "":
		return hl.Show
	case hl.Over.Bench != "":
		return "×"
	}
	return hl.Of.Unit
}

// met says whether the median meets the row's goal, and whether there was a
// goal to check.
func (hl headline) met(median float64) (met, checked bool) {
	switch {
	case hl.AtLeast != 0:
		return median >= hl.AtLeast, true
	case hl.AtMost != 0:
		return median <= hl.AtMost, true
	}
	return false, false
}

// value is the row's median and range: of the measure, or for a ratio the
// ratio of the medians and of the extremes (lowest over highest, highest
// over lowest).
func (hl headline) value(r *results) (med, lo, hi float64, ok bool) {
	of, ok := r.get(hl.Of.Bench, hl.Of.Unit)
	if !ok {
		return 0, 0, 0, false
	}
	if hl.Over.Bench == "" {
		return of.median(), of.min(), of.max(), true
	}
	over, ok := r.get(hl.Over.Bench, hl.Over.Unit)
	if !ok || over.median() == 0 || over.min() == 0 {
		return 0, 0, 0, false
	}
	return of.median() / over.median(), of.min() / over.max(), of.max() / over.min(), true
}

// num prints a figure for a table: thousands separated and no decimals from
// 1,000 up, three significant digits below.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	if math.Abs(v) >= 999.5 { // what would round to 1e+03
		s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
		var b strings.Builder
		if v < 0 {
			b.WriteByte('-')
		}
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
