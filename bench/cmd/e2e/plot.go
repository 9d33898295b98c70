package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

// drawPlots writes e2e-throughput.svg (pages/s over time), e2e-memory.svg
// (resident memory of the crawler's processes over time), both from the
// first run of each mode, and e2e-scaling.svg (pages/s against replicas)
// into dir.
func drawPlots(dir string, results, scaling []result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, sp := range []struct {
		file, title, y string
		step           float64 // seconds between two values of the series
		series         func(result) []float64
	}{
		{"e2e-throughput.svg", "Pages per second over the crawl (first run of each mode, 1 s buckets)", "pages/s (server side)", 1,
			func(r result) []float64 { return r.rate }},
		{"e2e-memory.svg", "Resident memory of the crawler's processes over the crawl (first run of each mode, summed)", "RSS (MiB)", rssEvery.Seconds(),
			func(r result) []float64 { return r.rss }},
	} {
		if err := seriesPlot(filepath.Join(dir, sp.file), sp.title, sp.y, sp.step, results, sp.series); err != nil {
			return nil, err
		}
		files = append(files, sp.file)
	}

	if len(scaling) == 0 {
		return files, nil
	}
	p := plot.New()
	p.Title.Text = "Cluster mode: pages/s as fetcher and parser replicas grow"
	p.X.Label.Text = "fetcher = parser replicas"
	p.Y.Label.Text = "pages/s"
	p.Add(plotter.NewGrid())
	var pts plotter.XYs
	for _, mode := range order(scaling) {
		n, err := strconv.Atoi(strings.TrimPrefix(mode, "cluster x"))
		if err != nil {
			return nil, fmt.Errorf("scaling mode %q", mode)
		}
		pts = append(pts, plotter.XY{X: float64(n), Y: medianOf(byMode(scaling, mode), result.pagesPerSec)})
	}
	lp, sp, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	lp.Color, sp.Color = palette[0], palette[0]
	p.Add(lp, sp)
	p.Y.Min = 0
	if err := save(p, 6*vg.Inch, 4*vg.Inch, filepath.Join(dir, "e2e-scaling.svg")); err != nil {
		return nil, err
	}
	return append(files, "e2e-scaling.svg"), nil
}

func shortLabel(mode string) string {
	switch mode {
	case "run":
		return "trawler run (all-in-one)"
	case "run-out":
		return "trawler run --out"
	case "run-warc":
		return "trawler run --archive (WARC)"
	case "cluster":
		return "trawler services"
	case "cluster-warc":
		return "trawler services + archive (WARC)"
	case "cluster-fp":
		return "trawler services, fetcher --with-parser"
	case "colly":
		return "colly"
	case "wget":
		return "wget"
	}
	return mode
}

// save writes the plot as SVG (for the docs) and as a PNG beside it (for
// viewers that do not render SVG).
func save(p *plot.Plot, w, h vg.Length, svg string) error {
	if err := p.Save(w, h, svg); err != nil {
		return err
	}
	return p.Save(w, h, strings.TrimSuffix(svg, ".svg")+".png")
}

// seriesPlot draws one line per mode (its first run) of a per-second series.
func seriesPlot(file, title, ylabel string, step float64, results []result, series func(result) []float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since start"
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	top := 0.0
	for i, mode := range order(results) {
		ys := series(byMode(results, mode)[0])
		pts := make(plotter.XYs, len(ys))
		for s, v := range ys {
			pts[s] = plotter.XY{X: (float64(s) + 0.5) * step, Y: v}
			top = max(top, v)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.2)
		if i >= len(palette) {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(shortLabel(mode), l)
	}
	// Top left: a crawl from one seed starts low (discovery), and memory
	// grows; the room above the lines is for the legend.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(10)
	p.X.Min = 0
	p.Y.Min, p.Y.Max = 0, top*1.4
	return save(p, 8*vg.Inch, 4.5*vg.Inch, file)
}
