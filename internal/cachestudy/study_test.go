package cachestudy

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/cachestudy/sim"
	"github.com/trawlerhq/trawler/internal/linkstream"
	"github.com/trawlerhq/trawler/pkg/cache"
)

func TestRunMatchesEachSimulation(t *testing.T) {
	tr := sim.NewTrace(linkstream.New(linkstream.Options{Seed: 3}).Fingerprints(100_000))
	sizes := []int{16, 256, 4096, 65536}
	tab, err := Run("linkstream", tr, sim.Policies, sizes, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sim.Policies {
		for i, s := range sizes {
			want, err := tr.Hits(p, s)
			if err != nil {
				t.Fatal(err)
			}
			if got := tab.Hits[p][i]; got != want {
				t.Errorf("%s at %d: table %d, simulation %d", p, s, got, want)
			}
		}
	}
	// The curve falls with size for the dynamic policies.
	for _, p := range []string{cache.LRU, cache.Clock, sim.MIN} {
		for i := 1; i < len(sizes); i++ {
			if tab.MissRate(p, i) > tab.MissRate(p, i-1) {
				t.Errorf("%s: miss rate rises from %d to %d", p, sizes[i-1], sizes[i])
			}
		}
	}

	var md, cs, svg1, svg2 bytes.Buffer
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(md.String(), "\n| 2^"); rows != len(sizes) {
		t.Errorf("markdown has %d size rows:\n%s", rows, md.String())
	}
	if err := tab.CSV(&cs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cs).ReadAll()
	if err != nil || len(recs) != 1+len(sim.Policies)*len(sizes) {
		t.Fatalf("csv: %d records, err %v", len(recs), err)
	}
	if err := tab.PlotMissRate(&svg1); err != nil {
		t.Fatal(err)
	}
	if err := tab.PlotRelativeToMIN(&svg2); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg1.Bytes(), len(sim.Policies))
	checkSVG(t, svg2.Bytes(), len(sim.Policies)-2) // MIN and INFINITE left out
}

// checkSVG parses the plot as XML and counts its lines.
func checkSVG(t *testing.T, data []byte, lines int) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg does not parse: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			n++
		}
	}
	if n != lines {
		t.Fatalf("svg has %d polylines, want %d", n, lines)
	}
}

func TestRunSplitSumsPartitions(t *testing.T) {
	s := linkstream.New(linkstream.Options{Seed: 4})
	parts := map[int][]uint64{0: s.Fingerprints(20_000), 1: s.Fingerprints(5_000), 2: nil}
	sizes := []int{16, 300, 3000}
	tab, err := RunSplit("split", parts, 3, sim.Policies, sizes, 2)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Requests != 25_000 {
		t.Fatalf("requests %d", tab.Requests)
	}
	for _, p := range sim.Policies {
		for i, size := range sizes {
			want := 0
			for _, fps := range parts {
				h, err := sim.NewTrace(fps).Hits(p, max(size/3, MinPartitionCache))
				if err != nil {
					t.Fatal(err)
				}
				want += h
			}
			if got := tab.Hits[p][i]; got != want {
				t.Errorf("%s at %d: %d hits, want %d", p, size, got, want)
			}
		}
	}
}

func TestCriticalSize(t *testing.T) {
	// Miss rates 90, 88, 85, 40, 22, 21, 20 %: the big drop is into 2^7,
	// the knee (within a tenth of the 70-point gain) is 2^8.
	tab := &Table{Requests: 100, Sizes: []int{16, 32, 64, 128, 256, 512, 1024},
		Hits: map[string][]int{cache.Clock: {10, 12, 15, 60, 78, 79, 80}}}
	c, err := tab.CriticalSize(cache.Clock)
	if err != nil || c.Steepest != 128 || c.Knee != 256 || math.Abs(c.KneeMissRate-0.22) > 1e-9 {
		t.Fatalf("critical %+v err %v", c, err)
	}
	if _, err := tab.CriticalSize(cache.LRU); err == nil {
		t.Fatal("missing policy accepted")
	}
}

func TestParse(t *testing.T) {
	got, err := ParseSizes("2^4..2^7, 100, 50_000,2^5")
	if want := []int{16, 32, 64, 100, 128, 50000}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("ParseSizes = %v, %v; want %v", got, err, want)
	}
	if got, _ := ParseSizes("2^4..2^24"); len(got) != 21 {
		t.Fatalf("2^4..2^24 gives %d sizes", len(got))
	}
	for _, bad := range []string{"", "0", "2^31", "2^x", "100..2^9", "2^9..2^4", "-5"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q) succeeded", bad)
		}
	}
	ps, err := ParsePolicies("static, LRU,min,lru")
	if want := []string{sim.MIN, cache.LRU, cache.Static}; err != nil || !slices.Equal(ps, want) {
		t.Fatalf("ParsePolicies = %v, %v", ps, err)
	}
	if _, err := ParsePolicies("lru,fifo"); err == nil {
		t.Fatal("fifo accepted")
	}
	if SizeLabel(65536) != "2^16" || SizeLabel(50000) != "50000" {
		t.Fatal("SizeLabel")
	}
}
