package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/bench/websim"
)

// TestDrawPlotsWritesSVGAndPNG draws the three plots from made-up runs: each
// SVG names its title, each PNG decodes.
func TestDrawPlotsWritesSVGAndPNG(t *testing.T) {
	run := func(mode string, rate float64) result {
		r := result{mode: mode, m: measured{wall: 10 * time.Second}, audit: websim.Audit{Fetched: int(rate * 10)}}
		for i := range 10 {
			r.rate = append(r.rate, rate+float64(i%3))
			r.rss = append(r.rss, 100+float64(i))
		}
		return r
	}
	results := []result{run("run", 1400), run("colly", 1200)}
	scaling := []result{run("cluster x1", 1290), run("cluster x2", 1100), run("cluster x4", 950)}
	dir := t.TempDir()
	files, err := drawPlots(dir, results, scaling)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files = %v", files)
	}
	for _, f := range files {
		svg, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%s is not an SVG", f)
		}
		pf, err := os.Open(filepath.Join(dir, strings.TrimSuffix(f, ".svg")+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(pf)
		pf.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s: %v", f, b)
		}
	}
}
