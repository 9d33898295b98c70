// Package linkstream generates a synthetic, deterministic stream of crawled
// pages and their outlinks with the locality of a real crawl's link stream,
// to benchmark and test URL caches (pkg/cache) without a crawl log.
//
// It is a model, not data. Its parameters come from Broder, Najork, Wiener,
// "Efficient URL Caching for World Wide Web Crawling" (WWW 2003):
//
//   - Links per page are log-normal with the paper's mean 62.55 and median
//     23 (section 4.2), capped at MaxLinks. Three quarters of the
//     log-variance is per host: a site's pages have similar sizes.
//   - About 30% of a page's links repeat another link on the same page
//     (RepeatOnPage; the paper: 42.74 unique of 62.55, "about 30%").
//   - 80% of the other links stay on the page's host (SameHost; 81.5% of
//     the paper's URLs stayed on their crawler because most links are
//     relative). The first NavLinks of them are the host's navigation, the
//     same on every page of the host; the rest go to the host's pages by
//     popularity (PageZipf), a page covering roughly a prefix of them.
//   - Links to other hosts pick a host by popularity (HostZipf) and a page
//     of it by popularity: a few hosts and pages most of the web links to.
//   - Crawl order is breadth-first-ish and interleaved (section 3: "pages
//     on a given host tend to be explored sequentially"): Parallel hosts are
//     crawled at once (Mercator: 500 threads per process), each taking one
//     page per round in a shuffled order, as politeness delays would space
//     them. A host's most popular pages are fetched first (the order BFS
//     discovers them), CrawlPerHost pages on average (log-normal), then the
//     crawler moves on to the next host in popularity order.
//
// The interleaving is what creates the paper's critical cache size: a host's
// navigation and popular pages are linked again about Parallel pages later,
// so a cache that holds Parallel hosts' working sets (about 100 entries
// each) hits on them and a smaller one does not.
//
// The package tests measure the stream (links per page, on-page repeats,
// same-host share, unique links); docs/cache.md gives the numbers and the
// hit rates of the caches on it.
package linkstream

import (
	"math"
	"math/bits"
	"sort"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Options shapes the synthetic web and its crawl. Zero fields take the
// defaults in parentheses; a negative RepeatOnPage or SameHost means 0.
type Options struct {
	Hosts        int     // hosts in the web (100,000)
	PagesPerHost int     // URLs per host that links point to (1,000)
	CrawlPerHost float64 // mean pages crawled per host, log-normal (30)
	LinksPerPage float64 // mean links per page, log-normal (62.55)
	LinksMedian  float64 // median links per page (23)
	MaxLinks     int     // cap on links per page (20,000)
	RepeatOnPage float64 // share of links repeating an earlier link on the page (0.30)
	SameHost     float64 // share of the other links going to the page's own host (0.80)
	NavLinks     int     // mean navigation links per host, on all its pages (20)
	HostZipf     float64 // Zipf exponent of host popularity (1.2)
	PageZipf     float64 // Zipf exponent of page popularity within a host (1.2)
	Parallel     int     // hosts crawled at once (500)
	Seed         uint64  // the same Options give the same stream
}

// Default returns the default options.
func Default() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	setInt(&o.Hosts, 100_000)
	setInt(&o.PagesPerHost, 1_000)
	setFloat(&o.CrawlPerHost, 30)
	setFloat(&o.LinksPerPage, 62.55)
	setFloat(&o.LinksMedian, 23)
	setInt(&o.MaxLinks, 20_000)
	setShare(&o.RepeatOnPage, 0.30)
	setShare(&o.SameHost, 0.80)
	setInt(&o.NavLinks, 20)
	setFloat(&o.HostZipf, 1.2)
	setFloat(&o.PageZipf, 1.2)
	setInt(&o.Parallel, 500)
	o.LinksMedian = min(o.LinksMedian, o.LinksPerPage) // a log-normal's mean >= median
	return o
}

func setInt(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

func setFloat(v *float64, d float64) {
	if *v <= 0 {
		*v = d
	}
}

func setShare(v *float64, d float64) {
	switch {
	case *v == 0:
		*v = d
	case *v < 0:
		*v = 0
	case *v > 1:
		*v = 1
	}
}

// hostShare is the part of the log-variance of links per page that is per
// host rather than per page: big pages come from sites with big pages, which
// keeps a site's links from growing without bound.
const hostShare = 0.75

// crawlSD is the log-normal shape of pages crawled per host.
const crawlSD = 1.0

// Stream yields pages in crawl order. It is not safe for concurrent use.
type Stream struct {
	o        Options
	rng      rng
	mu, sd   float64 // log-normal parameters of links per page
	hosts    zipf
	pages    zipf
	crawlers []crawler
	round    []int // crawler order in the current round
	turn     int   // position in round
	nextHost int
	links    []link            // the current page's links, reused
	onPage   map[link]struct{} // the current page's links to other hosts
	local    rankSet           // the current page's links to its own host
	buf      []byte
}

// link is a URL of the synthetic web: http://h<host>.example/p/<page>.
type link struct{ host, page int32 }

// crawler is one of the Parallel crawlers: the host it is on, the next page
// rank and the rank it stops at, and the host's traits.
type crawler struct {
	host, page, last int32
	mu               float64 // log-median links per page on this host
	nav              int32   // navigation links on every page of this host
}

// New returns a stream for o (zero fields take defaults).
func New(o Options) *Stream {
	o = o.withDefaults()
	s := &Stream{
		o:      o,
		rng:    rng(o.Seed),
		mu:     math.Log(o.LinksMedian),
		hosts:  newZipf(o.Hosts, o.HostZipf),
		pages:  newZipf(o.PagesPerHost, o.PageZipf),
		onPage: make(map[link]struct{}),
		local:  newRankSet(o.PagesPerHost),
	}
	// A log-normal's mean is exp(mu + sd^2/2) and its median exp(mu).
	s.sd = math.Sqrt(2 * math.Log(o.LinksPerPage/o.LinksMedian))
	s.crawlers = make([]crawler, min(o.Parallel, o.Hosts))
	s.round = make([]int, len(s.crawlers))
	for i := range s.crawlers {
		s.crawlers[i] = s.takeHost()
		s.round[i] = i
	}
	return s
}

// Options returns the stream's options with defaults filled in.
func (s *Stream) Options() Options { return s.o }

// NextPage returns the next crawled page's URL and its outlinks as absolute
// URLs, repeats included, in page order.
func (s *Stream) NextPage() (page string, links []string) {
	p := s.nextPage()
	links = make([]string, len(s.links))
	for i, l := range s.links {
		links[i] = l.String()
	}
	return p.String(), links
}

// Fingerprints returns the xxhash64 fingerprints (as pkg/urlx.Fingerprint
// computes them) of the next n links of the stream, page after page. The
// links of the last page beyond n are dropped.
func (s *Stream) Fingerprints(n int) []uint64 {
	fps := make([]uint64, 0, n)
	for len(fps) < n {
		s.nextPage()
		for _, l := range s.links[:min(len(s.links), n-len(fps))] {
			s.buf = l.append(s.buf[:0])
			fps = append(fps, xxhash.Sum64(s.buf))
		}
	}
	return fps
}

// nextPage lets the next crawler of the round fetch a page, and fills
// s.links with its outlinks.
func (s *Stream) nextPage() link {
	if s.turn == 0 {
		s.shuffleRound()
	}
	c := &s.crawlers[s.round[s.turn]]
	s.turn = (s.turn + 1) % len(s.round)

	p := link{c.host, c.page}
	s.genLinks(p, c)
	c.page++
	if c.page == c.last {
		*c = s.takeHost()
	}
	return p
}

// shuffleRound orders the crawlers of the next round at random: each fetches
// one page per round, which spaces a host's pages about Parallel pages apart
// without a fixed period.
func (s *Stream) shuffleRound() {
	for i := len(s.round) - 1; i > 0; i-- {
		j := s.rng.intn(i + 1)
		s.round[i], s.round[j] = s.round[j], s.round[i]
	}
}

// takeHost starts a crawler on the next host in popularity order (wrapping
// around) and draws the host's traits.
func (s *Stream) takeHost() crawler {
	h := s.nextHost
	s.nextHost = (s.nextHost + 1) % s.o.Hosts
	depth := math.Round(s.logNormal(math.Log(s.o.CrawlPerHost)-crawlSD*crawlSD/2, crawlSD))
	depth = max(1, min(depth, float64(s.o.PagesPerHost)))
	return crawler{
		host: int32(h),
		last: int32(depth),
		mu:   s.mu + math.Sqrt(hostShare)*s.sd*s.rng.normal(),
		nav:  int32(min(float64(s.o.NavLinks)*(0.5+s.rng.float()), float64(s.o.PagesPerHost))),
	}
}

// genLinks fills s.links with page p's outlinks.
func (s *Stream) genLinks(p link, c *crawler) {
	n := math.Round(s.logNormal(c.mu, math.Sqrt(1-hostShare)*s.sd))
	n = min(n, float64(s.o.MaxLinks))
	s.links = s.links[:0]
	clear(s.onPage)
	s.local.reset()
	nav := int32(0)
	for range int(n) {
		if len(s.links) > 0 && s.rng.float() < s.o.RepeatOnPage {
			s.links = append(s.links, s.links[s.rng.intn(len(s.links))])
			continue
		}
		if s.rng.float() < s.o.SameHost {
			r := s.sameHost(&nav, c.nav)
			s.local.add(r)
			s.links = append(s.links, link{p.host, int32(r)})
		} else {
			l := s.otherHost()
			s.onPage[l] = struct{}{}
			s.links = append(s.links, l)
		}
	}
}

// sameHost returns the rank of a page of the page's own host not yet linked
// from it: the host's navigation links (ranks 0..navs-1) first, counted by
// *nav, then a page by popularity, moving on to the next free rank. A page
// linking to many of its host's pages thus covers roughly a prefix of them,
// as a site's pages do.
func (s *Stream) sameHost(nav *int32, navs int32) int {
	for ; *nav < navs; *nav++ {
		if !s.local.has(int(*nav)) {
			*nav++
			return int(*nav - 1)
		}
	}
	r := s.pages.sample(&s.rng)
	if f := s.local.nextFree(r); f >= 0 {
		return f
	}
	return r // the page already links to every page of its host
}

// otherHost draws a host and one of its pages by popularity, retrying a few
// times if that link is already on the page.
func (s *Stream) otherHost() link {
	var l link
	for range 8 {
		l = link{int32(s.hosts.sample(&s.rng)), int32(s.pages.sample(&s.rng))}
		if _, dup := s.onPage[l]; !dup {
			break
		}
	}
	return l
}

func (s *Stream) logNormal(mu, sd float64) float64 { return math.Exp(mu + sd*s.rng.normal()) }

func (l link) String() string { return string(l.append(nil)) }

func (l link) append(b []byte) []byte {
	b = append(b, "http://h"...)
	b = strconv.AppendInt(b, int64(l.host), 10)
	b = append(b, ".example/p/"...)
	return strconv.AppendInt(b, int64(l.page), 10)
}

// zipf samples ranks 0..n-1 with P(r) proportional to 1/(r+1)^s by binary
// search in the cumulative weights.
type zipf struct{ cum []float64 }

func newZipf(n int, s float64) zipf {
	cum := make([]float64, n)
	total := 0.0
	for r := range cum {
		total += math.Pow(float64(r+1), -s)
		cum[r] = total
	}
	return zipf{cum}
}

func (z zipf) sample(r *rng) int {
	u := r.float() * z.cum[len(z.cum)-1]
	return min(sort.SearchFloat64s(z.cum, u), len(z.cum)-1)
}

// rankSet is a set of a host's page ranks [0, n), as a bitset.
type rankSet struct {
	w []uint64
	n int
}

func newRankSet(n int) rankSet { return rankSet{make([]uint64, (n+63)/64), n} }

func (b rankSet) reset()         { clear(b.w) }
func (b rankSet) has(i int) bool { return b.w[i>>6]&(1<<(i&63)) != 0 }
func (b rankSet) add(i int)      { b.w[i>>6] |= 1 << (i & 63) }

// nextFree returns the first rank not in the set at or after i, wrapping
// around, or -1 when the set is full.
func (b rankSet) nextFree(i int) int {
	for range len(b.w) + 1 {
		free := ^b.w[i>>6] >> (i & 63) // ranks i.. of i's word that are free
		if free != 0 {
			if f := i + bits.TrailingZeros64(free); f < b.n {
				return f
			}
			i = 0 // only padding bits past the last rank were free
			continue
		}
		if i = (i | 63) + 1; i >= b.n {
			i = 0
		}
	}
	return -1
}

// rng is SplitMix64: small, fast, and the stream depends on nothing else.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float is uniform in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// intn is uniform in [0, n).
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// normal is a standard normal deviate (Box-Muller).
func (r *rng) normal() float64 {
	u := 1 - r.float() // in (0, 1], so the log is finite
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}
