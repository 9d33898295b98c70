package cache

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/linkstream"
)

func envf(k string) float64 { v, _ := strconv.ParseFloat(os.Getenv(k), 64); return v }
func envi(k string) int     { v, _ := strconv.Atoi(os.Getenv(k)); return v }

func TestZZTune(t *testing.T) {
	if os.Getenv("TUNE") == "" {
		t.Skip()
	}
	o := linkstream.Options{Hosts: envi("H"), PagesPerHost: envi("P"), HostZipf: envf("HZ"), PageZipf: envf("PZ"), Parallel: envi("PAR"), SameHost: envf("SH")}
	t0 := time.Now()
	tr := linkstream.New(o).Fingerprints(2_000_000)
	fmt.Println("gen", time.Since(t0))
	n := float64(len(tr))
	fmt.Printf("INF %.1f\n", 100*float64(SimulateInfinite(tr))/n)
	counts := map[uint64]int{}
	for _, fp := range tr {
		counts[fp]++
	}
	for _, size := range []int{100, 1000, 5000, 10000, 20000, 50000, 100000, 500000} {
		l := fmt.Sprintf("%7d", size)
		for _, p := range []string{"lru", "clock", "random"} {
			c, _ := New(p, size)
			l += fmt.Sprintf(" %s=%.1f", p, 100*float64(Replay(c, tr))/n)
		}
		markNew = false
		c, _ := New("clock", size)
		l += fmt.Sprintf(" clock0=%.1f", 100*float64(Replay(c, tr))/n)
		markNew = true
		l += fmt.Sprintf(" static=%.1f", 100*float64(Replay(NewStatic(topK(counts, size)), tr))/n)
		if os.Getenv("MIN") != "" {
			l += fmt.Sprintf(" min=%.1f", 100*float64(SimulateMIN(tr, size))/n)
		}
		fmt.Println(l)
	}
}
