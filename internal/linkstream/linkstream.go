// Package linkstream generates a synthetic, deterministic stream of crawled
// pages and their outlinks with the locality a real crawl's link stream has,
// for benchmarking and testing URL caches (pkg/cache) without a crawl log.
//
// It is a model, not data. Its parameters come from Broder, Najork, Wiener,
// "Efficient URL Caching for World Wide Web Crawling" (WWW 2003), section 4.2
// and section 3 (sources of locality):
//
//   - Links per page are log-normal with the paper's mean 62.55 and median
//     23 (Options.LinksPerPage, LinksMedian), capped at MaxLinks.
//   - About 30% of a page's links repeat another link on the same page
//     (RepeatOnPage); the paper reports 42.74 unique of 62.55 links.
//   - Most links stay on the page's host (SameHost, 0.8): the paper's host
//     splitter kept 81.5% of URLs local because most links are relative.
//   - Link targets follow Zipf popularity: hosts by HostZipf, pages within a
//     host by PageZipf, so every host has a few pages (home, sections) that
//     most of its pages link to, and a few hosts most of the web links to.
//   - Crawl order is breadth-first-ish and interleaved: Parallel hosts are
//     crawled at once (Mercator ran 500 threads per process), each host's
//     pages in popularity order (the order BFS discovers them), picking the
//     next host to crawl in popularity order. This interleaving is what puts
//     a critical cache size at about Parallel x links per page: below it a
//     host's shared links are evicted before its next page comes round.
//
// The package test measures the generated stream (mean and median links per
// page, on-page repeats, same-host share, unique-link ratio); docs/cache.md
// gives the numbers.
package linkstream

import (
	"math"
	"math/bits"
	"sort"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Options shapes the synthetic web and crawl. Zero fields take the defaults
// listed; a negative RepeatOnPage or SameHost means 0.
type Options struct {
	Hosts        int     // hosts in the synthetic web (100,000)
	PagesPerHost int     // pages of each host (2,000)
	LinksPerPage float64 // mean links per page, log-normal (62.55, the paper's)
	LinksMedian  float64 // median links per page (23, the paper's)
	MaxLinks     int     // cap on links per page (20,000)
	RepeatOnPage float64 // share of a page's links repeating an earlier link on it (0.30)
	SameHost     float64 // share of a page's other links pointing to its own host (0.80)
	HostZipf     float64 // Zipf exponent of host popularity (1.0)
	PageZipf     float64 // Zipf exponent of page popularity within a host (1.0)
	Parallel     int     // hosts crawled at once (500)
	Seed         uint64  // the same Options give the same stream
}

// Default returns the default options.
func Default() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	setInt(&o.Hosts, 100_000)
	setInt(&o.PagesPerHost, 2_000)
	setFloat(&o.LinksPerPage, 62.55)
	setFloat(&o.LinksMedian, 23)
	setInt(&o.MaxLinks, 20_000)
	setShare(&o.RepeatOnPage, 0.30)
	setShare(&o.SameHost, 0.80)
	setFloat(&o.HostZipf, 1.0)
	setFloat(&o.PageZipf, 1.0)
	setInt(&o.Parallel, 500)
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

// Stream yields pages in crawl order. It is not safe for concurrent use.
type Stream struct {
	o        Options
	rng      rng
	mu, sd   float64 // log-normal parameters of links per page
	hosts    zipf
	pages    zipf
	crawling []crawl // one per parallel crawler
	nextHost int
	links    []link       // the current page's links, reused
	onPage   map[link]int // the current page's distinct links, reused
	buf      []byte
}

// link is a URL of the synthetic web: http://h<host>.example/p<page>.
type link struct{ host, page int32 }

// crawl is one crawler's position: the host it is on and its next page.
type crawl struct{ host, page int32 }

// New returns a stream for o (zero fields take defaults).
func New(o Options) *Stream {
	o = o.withDefaults()
	s := &Stream{
		o:      o,
		rng:    rng(o.Seed),
		mu:     math.Log(o.LinksMedian),
		hosts:  newZipf(o.Hosts, o.HostZipf),
		pages:  newZipf(o.PagesPerHost, o.PageZipf),
		onPage: make(map[link]int),
	}
	// A log-normal's mean is exp(mu + sd^2/2) and its median exp(mu).
	s.sd = math.Sqrt(2 * math.Max(0, math.Log(o.LinksPerPage/o.LinksMedian)))
	s.crawling = make([]crawl, min(o.Parallel, o.Hosts))
	for i := range s.crawling {
		s.crawling[i] = crawl{host: s.takeHost()}
	}
	return s
}

// Options returns the stream's options with defaults filled in.
func (s *Stream) Options() Options { return s.o }

// NextPage returns the next crawled page's URL and its outlinks as absolute
// URLs, duplicates included, in page order.
func (s *Stream) NextPage() (page string, links []string) {
	p := s.nextPage()
	links = make([]string, len(s.links))
	for i, l := range s.links {
		links[i] = s.url(l)
	}
	return s.url(p), links
}

// Fingerprints returns the xxhash64 fingerprints of the next n links of the
// stream (pkg/urlx.Fingerprint of each URL), page after page. The links of
// the last page beyond n are dropped.
func (s *Stream) Fingerprints(n int) []uint64 {
	fps := make([]uint64, 0, n)
	for len(fps) < n {
		s.nextPage()
		for _, l := range s.links {
			if len(fps) == n {
				break
			}
			s.buf = appendURL(s.buf[:0], l)
			fps = append(fps, xxhash.Sum64(s.buf))
		}
	}
	return fps
}

// nextPage advances a random crawler by one page and fills s.links with the
// page's outlinks. The random pick stands in for fetch timing and
// politeness delays, which interleave hosts irregularly.
func (s *Stream) nextPage() link {
	c := &s.crawling[s.rng.intn(len(s.crawling))]
	p := link{c.host, c.page}
	c.page++
	if int(c.page) == s.o.PagesPerHost {
		*c = crawl{host: s.takeHost()}
	}
	s.genLinks(p)
	return p
}

// takeHost returns the next host to crawl: hosts in popularity order, as
// breadth-first search meets them, wrapping around.
func (s *Stream) takeHost() int32 {
	h := s.nextHost
	s.nextHost = (s.nextHost + 1) % s.o.Hosts
	return int32(h)
}

func (s *Stream) genLinks(p link) {
	n := s.linkCount()
	s.links = s.links[:0]
	clear(s.onPage)
	for range n {
		if len(s.links) > 0 && s.rng.float() < s.o.RepeatOnPage {
			s.links = append(s.links, s.links[s.rng.intn(len(s.links))])
			continue
		}
		l := s.freshLink(p)
		s.onPage[l]++
		s.links = append(s.links, l)
	}
}

// linkCount draws a log-normal number of links, capped.
func (s *Stream) linkCount() int {
	n := math.Round(math.Exp(s.mu + s.sd*s.rng.normal()))
	return int(min(n, float64(s.o.MaxLinks)))
}

// freshLink draws a target not yet on the page when it can: a few tries,
// then it accepts a repeat (a small host cannot fill a huge page).
func (s *Stream) freshLink(p link) link {
	var l link
	for range 8 {
		l = s.target(p)
		if s.onPage[l] == 0 {
			return l
		}
	}
	return l
}

// target draws a link target from page p: its own host with probability
// SameHost, else a host by popularity; then a page by popularity.
func (s *Stream) target(p link) link {
	h := p.host
	if s.rng.float() >= s.o.SameHost {
		h = int32(s.hosts.sample(&s.rng))
	}
	return link{h, int32(s.pages.sample(&s.rng))}
}

func (s *Stream) url(l link) string { return string(appendURL(nil, l)) }

func appendURL(b []byte, l link) []byte {
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

// rng is SplitMix64, small and fast; the stream depends on nothing else.
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
	u := 1 - r.float() // (0, 1]: keeps Log finite
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}
