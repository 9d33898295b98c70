package cachestudy

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/trawlerhq/trawler/internal/cachestudy/sim"
	"github.com/trawlerhq/trawler/pkg/cache"
)

// SizeLabel writes a size as 2^k when it is a power of two.
func SizeLabel(n int) string {
	if n > 1 && n&(n-1) == 0 {
		return fmt.Sprintf("2^%d", bits.TrailingZeros(uint(n)))
	}
	return strconv.Itoa(n)
}

// Markdown writes the miss rates (%) as a table, a row per size and a column
// per policy.
func (t *Table) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Miss rate (%%) on %s: %d requests, %d distinct fingerprints (INFINITE's miss rate %.2f%%).\n\n",
		t.Name, t.Requests, t.Distinct, 100*float64(t.Distinct)/float64(max(t.Requests, 1)))
	fmt.Fprint(bw, "| size |")
	for _, p := range t.Policies {
		fmt.Fprintf(bw, " %s |", strings.ToUpper(p))
	}
	fmt.Fprint(bw, "\n|---:|")
	for range t.Policies {
		fmt.Fprint(bw, "---:|")
	}
	fmt.Fprintln(bw)
	for i, s := range t.Sizes {
		fmt.Fprintf(bw, "| %s (%d) |", SizeLabel(s), s)
		for _, p := range t.Policies {
			fmt.Fprintf(bw, " %.2f |", 100*t.MissRate(p, i))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// CSV writes one row per policy and size.
func (t *Table) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"trace", "policy", "size", "requests", "hits", "misses", "miss_rate"})
	for _, p := range t.Policies {
		for i, s := range t.Sizes {
			h := t.Hits[p][i]
			_ = cw.Write([]string{t.Name, p, strconv.Itoa(s), strconv.Itoa(t.Requests), strconv.Itoa(h),
				strconv.Itoa(t.Requests - h), strconv.FormatFloat(t.MissRate(p, i), 'f', 6, 64)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// Colors and dashes per policy, stable across plots.
var style = map[string]struct{ color, dash string }{
	sim.Infinite: {"#555555", "2,3"},
	sim.MIN:      {"#000000", ""},
	cache.LRU:    {"#1f77b4", ""},
	cache.Clock:  {"#d62728", "6,3"},
	cache.Random: {"#2ca02c", ""},
	cache.Static: {"#9467bd", ""},
}

// PlotMissRate writes the paper's Figure 2/4: miss rate against cache size,
// log x.
func (t *Table) PlotMissRate(w io.Writer) error {
	series := map[string][]float64{}
	top := 0.0
	for _, p := range t.Policies {
		for i := range t.Sizes {
			m := 100 * t.MissRate(p, i)
			series[p] = append(series[p], m)
			top = math.Max(top, m)
		}
	}
	return t.plot(w, "Miss rate vs. cache size: "+t.Name, "miss rate (%)", series, 0, niceCeil(top))
}

// PlotRelativeToMIN writes the paper's Figure 3/5: each policy's miss rate
// divided by MIN's at the same size (INFINITE and MIN itself left out).
func (t *Table) PlotRelativeToMIN(w io.Writer) error {
	if _, ok := t.Hits[sim.MIN]; !ok {
		return fmt.Errorf("cachestudy: relative plot needs the min policy")
	}
	series := map[string][]float64{}
	top := 1.0
	for _, p := range t.Policies {
		if p == sim.MIN || p == sim.Infinite {
			continue
		}
		for i := range t.Sizes {
			r := 1.0
			if m := t.MissRate(sim.MIN, i); m > 0 {
				r = t.MissRate(p, i) / m
			}
			series[p] = append(series[p], r)
			top = math.Max(top, r)
		}
	}
	return t.plot(w, "Miss rate relative to MIN: "+t.Name, "miss rate / MIN's miss rate", series, 0, niceCeil(top))
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v*0.9999 {
			return m * p
		}
	}
	return 10 * p
}

// plot draws series (one value per size) as lines over a log2 x axis, by
// hand: the plot is a few dozen SVG elements, not worth a dependency.
func (t *Table) plot(w io.Writer, title, ylabel string, series map[string][]float64, ymin, ymax float64) error {
	const (
		width, height          = 760, 460
		left, right, top, bott = 70, 150, 40, 60
	)
	pw, ph := float64(width-left-right), float64(height-top-bott)
	lo, hi := math.Log2(float64(t.Sizes[0])), math.Log2(float64(t.Sizes[len(t.Sizes)-1]))
	if hi == lo {
		hi = lo + 1
	}
	x := func(size int) float64 { return left + pw*(math.Log2(float64(size))-lo)/(hi-lo) }
	y := func(v float64) float64 { return top + ph*(1-(v-ymin)/(ymax-ymin)) }

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(bw, `<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// Grid and axes.
	for k := 0; k <= 5; k++ {
		v := ymin + (ymax-ymin)*float64(k)/5
		fmt.Fprintf(bw, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, left+pw, y(v), y(v))
		fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, strconv.FormatFloat(v, 'g', 4, 64))
	}
	lastLabel := math.Inf(-1)
	for _, s := range t.Sizes {
		fmt.Fprintf(bw, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#f0f0f0"/>`+"\n", x(s), x(s), top, top+ph)
		if x(s)-lastLabel >= 28 { // labels that would overlap are left out
			lastLabel = x(s)
			label := html.EscapeString(SizeLabel(s))
			if base, exp, ok := strings.Cut(label, "^"); ok { // a superscript exponent
				label = fmt.Sprintf(`%s<tspan dy="-6" font-size="9">%s</tspan>`, base, exp)
			}
			fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(s), top+ph+18, label)
		}
	}
	fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">cache size (entries, log scale)</text>`+"\n", left+pw/2, height-18)
	fmt.Fprintf(bw, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, html.EscapeString(ylabel))
	// Series, in the paper's order, and the legend.
	n := 0
	for _, p := range t.Policies {
		vals, ok := series[p]
		if !ok {
			continue
		}
		st := style[p]
		var pts []string
		for i, v := range vals {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t.Sizes[i]), y(v)))
		}
		fmt.Fprintf(bw, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>`+"\n", st.color, st.dash, strings.Join(pts, " "))
		for _, pt := range pts {
			xy := strings.Split(pt, ",")
			fmt.Fprintf(bw, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], st.color)
		}
		ly := float64(top + 14 + 20*n)
		fmt.Fprintf(bw, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", left+pw+12, left+pw+40, ly, ly, st.color, st.dash)
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+pw+46, ly+4, strings.ToUpper(p))
		n++
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}
