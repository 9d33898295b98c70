package linkstream

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func TestDeterministic(t *testing.T) {
	a, b, c := New(Options{Seed: 7}), New(Options{Seed: 7}), New(Options{Seed: 8})
	differs := false
	for i := range 300 {
		pa, la := a.NextPage()
		pb, lb := b.NextPage()
		pc, lc := c.NextPage()
		if pa != pb || !slices.Equal(la, lb) {
			t.Fatalf("page %d differs for the same seed: %s vs %s", i, pa, pb)
		}
		differs = differs || pa != pc || !slices.Equal(la, lc)
	}
	if !differs {
		t.Fatal("seeds 7 and 8 gave the same stream")
	}
}

func TestFingerprints(t *testing.T) {
	const n = 10_000
	fps := New(Options{Seed: 3}).Fingerprints(n)
	if len(fps) != n {
		t.Fatalf("%d fingerprints, want %d", len(fps), n)
	}
	s := New(Options{Seed: 3})
	var want []uint64
	for len(want) < n {
		_, links := s.NextPage()
		for _, l := range links {
			want = append(want, xxhash.Sum64String(l))
		}
	}
	if !slices.Equal(fps, want[:n]) {
		t.Fatal("Fingerprints differs from hashing NextPage's links")
	}
}

var urlRE = regexp.MustCompile(`^http://h(\d+)\.example/p/(\d+)$`)

// summary is what the package documentation promises about a stream.
type summary struct {
	pages, links                  int
	meanLinks, medianLinks        float64
	meanUnique, medianUnique      float64
	repeatShare, sameHostShare    float64 // of all links; of distinct links on a page
	uniqueRatio                   float64 // distinct links in the stream / links
	hostsCrawled, pagesCrawledMax int
}

func measure(t *testing.T, o Options, pages int) summary {
	t.Helper()
	s := New(o)
	var sum summary
	var counts, uniques []int
	var repeats, distinct, same int
	seen := map[string]bool{}
	hosts := map[string]int{}
	for range pages {
		page, links := s.NextPage()
		m := urlRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("page URL %q", page)
		}
		hosts[m[1]]++
		onPage := map[string]bool{}
		for _, l := range links {
			lm := urlRE.FindStringSubmatch(l)
			if lm == nil {
				t.Fatalf("link URL %q", l)
			}
			if onPage[l] {
				repeats++
				continue
			}
			onPage[l] = true
			distinct++
			if lm[1] == m[1] {
				same++
			}
			seen[l] = true
		}
		counts = append(counts, len(links))
		uniques = append(uniques, len(onPage))
		sum.links += len(links)
	}
	sum.pages = pages
	sum.meanLinks, sum.medianLinks = meanMedian(counts)
	sum.meanUnique, sum.medianUnique = meanMedian(uniques)
	sum.repeatShare = float64(repeats) / float64(sum.links)
	sum.sameHostShare = float64(same) / float64(distinct)
	sum.uniqueRatio = float64(len(seen)) / float64(sum.links)
	sum.hostsCrawled = len(hosts)
	for _, n := range hosts {
		sum.pagesCrawledMax = max(sum.pagesCrawledMax, n)
	}
	return sum
}

func meanMedian(v []int) (mean, median float64) {
	total := 0
	for _, x := range v {
		total += x
	}
	sorted := slices.Clone(v)
	sort.Ints(sorted)
	return float64(total) / float64(len(v)), float64(sorted[len(sorted)/2])
}

// TestMatchesPaper measures the default stream against the paper's figures
// (section 4.2) and the model's intent. The numbers go in docs/cache.md.
func TestMatchesPaper(t *testing.T) {
	pages := 32_000 // about 2 million links
	if testing.Short() {
		pages = 5_000
	}
	s := measure(t, Options{Seed: 1}, pages)
	t.Logf("%d pages, %d links, %d hosts crawled (at most %d pages from one)", s.pages, s.links, s.hostsCrawled, s.pagesCrawledMax)
	t.Logf("links/page mean %.2f median %.0f (paper 62.55, 23)", s.meanLinks, s.medianLinks)
	t.Logf("unique links/page mean %.2f median %.0f (paper 42.74, 17)", s.meanUnique, s.medianUnique)
	t.Logf("repeats on the page %.1f%% of links (paper about 30%%)", 100*s.repeatShare)
	t.Logf("same-host %.1f%% of a page's distinct links (option 80%%)", 100*s.sameHostShare)
	t.Logf("distinct links in the stream %.1f%% of links (INFINITE misses)", 100*s.uniqueRatio)

	within := func(name string, got, lo, hi float64) {
		if got < lo || got > hi {
			t.Errorf("%s = %.3f, want in [%.3f, %.3f]", name, got, lo, hi)
		}
	}
	within("mean links/page", s.meanLinks, 50, 75)
	within("median links/page", s.medianLinks, 19, 27)
	within("repeat share", s.repeatShare, 0.27, 0.35)
	within("same-host share", s.sameHostShare, 0.75, 0.85)
	within("unique ratio", s.uniqueRatio, 0.05, 0.25)
	if s.hostsCrawled < 1000 {
		t.Errorf("only %d hosts crawled: the crawl should move through hosts", s.hostsCrawled)
	}
}

func TestOptions(t *testing.T) {
	d := Default()
	if d.Hosts != 100_000 || d.LinksPerPage != 62.55 || d.LinksMedian != 23 || d.RepeatOnPage != 0.30 || d.SameHost != 0.80 || d.Parallel != 500 {
		t.Fatalf("defaults %+v", d)
	}
	if got := New(Options{Seed: 1, Hosts: 5}).Options(); got.Hosts != 5 || got.PagesPerHost != 1_000 {
		t.Fatalf("set fields must stay, zero ones take defaults: %+v", got)
	}
	// Negative shares mean none: no repeats, no links to other hosts.
	s := measure(t, Options{Seed: 1, RepeatOnPage: -1, SameHost: 2, Hosts: 50, Parallel: 10, MaxLinks: 500}, 500)
	if s.repeatShare != 0 || s.sameHostShare != 1 {
		t.Fatalf("repeats %.3f same-host %.3f, want 0 and 1", s.repeatShare, s.sameHostShare)
	}
	s = measure(t, Options{Seed: 1, SameHost: -1, PagesPerHost: 10}, 500)
	if s.sameHostShare > 0.01 { // a link to another host may hit the page's own by chance
		t.Fatalf("same-host %.3f with SameHost < 0", s.sameHostShare)
	}
}

// TestSmallHostsSaturate checks that pages wanting more links to their host
// than it has repeat them rather than loop or invent pages.
func TestSmallHostsSaturate(t *testing.T) {
	s := New(Options{Seed: 2, PagesPerHost: 3, SameHost: 2, LinksMedian: 50, LinksPerPage: 60})
	for range 50 {
		_, links := s.NextPage()
		for _, l := range links {
			if !strings.HasSuffix(l, "/p/0") && !strings.HasSuffix(l, "/p/1") && !strings.HasSuffix(l, "/p/2") {
				t.Fatalf("link %s outside a 3-page host", l)
			}
		}
	}
}

func TestRankSetNextFree(t *testing.T) {
	for _, n := range []int{1, 3, 64, 65, 130} {
		b := newRankSet(n)
		for i := range n {
			if got := b.nextFree(i); got != i {
				t.Fatalf("n %d: empty set nextFree(%d) = %d", n, i, got)
			}
		}
		for i := range n - 1 {
			b.add(i)
		}
		for i := range n {
			if got := b.nextFree(i); got != n-1 {
				t.Fatalf("n %d: only %d free, nextFree(%d) = %d", n, n-1, i, got)
			}
		}
		b.add(n - 1)
		if got := b.nextFree(n / 2); got != -1 {
			t.Fatalf("n %d: full set nextFree = %d", n, got)
		}
		b.reset()
		b.add(0)
		if got := b.nextFree(n - 1); n > 1 && got != n-1 {
			t.Fatalf("n %d: nextFree(last) = %d", n, got)
		}
	}
}
