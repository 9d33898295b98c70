// Package websim is a deterministic synthetic web for end-to-end crawl
// benchmarks: N hosts, each on its own loopback address (127.1.x.y) so that
// per-host politeness is observable from the server side, with pages and
// links shaped like the web measured by Broder et al. (median ~23, mean ~62
// links per page, ~30 % repeated within a page, ~80 % to the page's own host,
// cross-host links with Zipf popularity), plus 404s, redirects and a
// robots.txt that disallows a linked subtree.
//
// Everything a page serves is a pure function of (Config, host, path), so a
// web is identical across runs and processes, and the exact set of URLs a
// correct crawler must request (Truth) is computed without any network.
package websim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Config describes a web. The zero value of every field takes a default.
type Config struct {
	Seed  uint64 // everything is derived from it
	Hosts int    // default 20
	Pages int    // regular pages per host, "/" included; default 50
	Port  int    // every host listens on 127.1.x.y:Port; default 18080

	// Latency is the median time a host takes before answering; each host
	// gets its own latency drawn around it (log-normal), so some are slow.
	Latency time.Duration
	// Topics > 0 turns on the topical mode: each page is about one of this
	// many topics and 80 % of its same-host links go to pages of its topic.
	Topics int
	// Traps adds crawler traps linked from ~5 % of pages: an endless
	// calendar, ever-longer URLs and an endless redirect chain. They are
	// not part of the ground truth.
	Traps bool
	// SeedHosts is how many hosts' home pages are seeds; default all (one
	// in the discovery mode).
	SeedHosts int
	// Discovery makes the web look like the one a crawler meets (see
	// discovery.go): hosts with names (siteN.test, answered by the web's
	// own DNS server, Server.DNSAddr), found from one seed by following
	// links, every home page linking the next host's so that all are
	// reachable; links written in every form pages use (absolute,
	// scheme-relative, host-relative, ../x, ./x, bare names, fragments,
	// empty queries, the default port, upper-case hosts) and pages of
	// varied text in a realistic HTML shell. Off: the seeded web of the
	// first benchmarks (IP hosts, every home page a seed, simple hrefs).
	Discovery bool
	// Dirs, when set, makes the files web (files.go): one host per
	// directory, serving its real files, every home page a seed; Hosts is
	// len(Dirs), Pages and Seed are not used, hosts are named as in the
	// discovery mode.
	Dirs []string
	// Block is the second octet of the hosts' loopback addresses,
	// 127.Block.x.y; default 1. Webs served at once need their own blocks
	// when they share a port.
	Block int
	// Failing is the share of hosts (never the first, the seed's) that
	// fail, spread over the hosts' order: half are down (their name
	// resolves, nothing listens at their address: the connection is
	// refused), half hang (the connection is accepted and nothing is ever
	// answered, until the client gives up). A correct crawler fetches
	// nothing from them but robots.txt (RFC 9309: robots.txt unreachable,
	// the site is disallowed): their URLs are not in the truth.
	Failing float64
}

// FailMode is how a failing host fails (Config.Failing).
type FailMode int

// The failing hosts' modes.
const (
	Healthy FailMode = iota
	Down             // nothing listens at its address
	Hang             // connections accepted, nothing answered
)

func (m FailMode) String() string {
	return [...]string{"healthy", "down", "hang"}[m]
}

// The shape of the link graph (Broder, Najork and Wiener 2003; the link
// stream of internal/linkstream uses the same figures).
const (
	linksMedian    = 23.0
	linksMean      = 62.0
	maxLinks       = 1500
	repeatShare    = 0.30 // links that repeat an earlier link of the page
	sameHostShare  = 0.80
	redirectShare  = 0.02 // of same-host links: /old/N, 301 to the page
	goneShare      = 0.01 // of same-host links: /gone/N, 404
	privateShare   = 0.01 // of same-host links: /private/N, disallowed
	trapPageShare  = 0.05 // pages linking into the traps (trap mode)
	hostZipfS      = 1.0
	pageZipfS      = 0.8
	bodyMedian     = 16 << 10 // HTML bytes
	bodySigma      = 0.8
	maxBody        = 256 << 10
	topicalShare   = 0.8
	privatePrefix  = "/private/"
	robotsDisallow = "User-agent: *\nDisallow: " + privatePrefix + "\n"
)

// Web is a configured synthetic web.
type Web struct {
	cfg       Config
	hostRank  []int // Zipf rank -> host index, a seeded permutation
	hostZipf  zipf
	pageZipf  zipf
	latencies []time.Duration
	failing   []FailMode
}

// New returns the web of cfg with defaults filled in.
func New(cfg Config) (*Web, error) {
	if len(cfg.Dirs) > 0 {
		cfg.Hosts, cfg.SeedHosts, cfg.Discovery = len(cfg.Dirs), len(cfg.Dirs), true
	}
	if cfg.Hosts == 0 {
		cfg.Hosts = 20
	}
	if cfg.Pages == 0 {
		cfg.Pages = 50
	}
	if cfg.Port == 0 {
		cfg.Port = 18080
	}
	if cfg.Block == 0 {
		cfg.Block = 1
	}
	if cfg.SeedHosts == 0 && cfg.Discovery {
		cfg.SeedHosts = 1
	}
	if cfg.SeedHosts == 0 || cfg.SeedHosts > cfg.Hosts {
		cfg.SeedHosts = cfg.Hosts
	}
	if cfg.Block < 1 || cfg.Block > 254 || cfg.Hosts < 1 || cfg.Hosts > 250*250 || cfg.Pages < 1 || cfg.Port < 1 || cfg.Port > 65535 || cfg.Topics < 0 || cfg.Latency < 0 || cfg.Failing < 0 || cfg.Failing >= 1 {
		return nil, fmt.Errorf("websim: bad config %+v", cfg)
	}
	w := &Web{cfg: cfg, hostZipf: newZipf(cfg.Hosts, hostZipfS), pageZipf: newZipf(cfg.Pages, pageZipfS)}
	r := newRNG(cfg.Seed, 0xfeed, 0)
	w.hostRank = make([]int, cfg.Hosts)
	for i := range w.hostRank {
		w.hostRank[i] = i
	}
	for i := len(w.hostRank) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		w.hostRank[i], w.hostRank[j] = w.hostRank[j], w.hostRank[i]
	}
	w.latencies = make([]time.Duration, cfg.Hosts)
	for h := range w.latencies {
		if cfg.Latency > 0 {
			w.latencies[h] = time.Duration(float64(cfg.Latency) * math.Exp(0.5*r.normal()))
		}
	}
	// Failing hosts by a golden-ratio sequence: spread evenly over the
	// hosts, popular and obscure alike, alternately down and hanging.
	w.failing = make([]FailMode, cfg.Hosts)
	modes := 0
	for h := 1; h < cfg.Hosts; h++ {
		if _, frac := math.Modf(float64(h) * 0.6180339887498949); frac < cfg.Failing {
			w.failing[h] = Down + FailMode(modes%2)
			modes++
		}
	}
	return w, nil
}

// Failing is how host h fails (Healthy: it does not).
func (w *Web) Failing(h int) FailMode { return w.failing[h] }

// Config returns the configuration with defaults filled in.
func (w *Web) Config() Config { return w.cfg }

// Addr is host h's listen address, 127.Block.x.y:port (x, y from 1 to 250).
func (w *Web) Addr(h int) string {
	return fmt.Sprintf("%s:%d", w.IP(h), w.cfg.Port)
}

// IP is host h's loopback address, 127.Block.x.y.
func (w *Web) IP(h int) string {
	return fmt.Sprintf("127.%d.%d.%d", w.cfg.Block, h/250+1, h%250+1)
}

// Name is host h's name in URLs: siteN.test in the discovery mode, its
// address otherwise.
func (w *Web) Name(h int) string {
	if w.cfg.Discovery {
		return "site" + strconv.Itoa(h) + ".test"
	}
	return w.IP(h)
}

// HostPort is host h's authority in canonical URLs: its name, with the
// port unless it is 80.
func (w *Web) HostPort(h int) string {
	if w.cfg.Port == 80 {
		return w.Name(h)
	}
	return w.Name(h) + ":" + strconv.Itoa(w.cfg.Port)
}

// Origin is host h's canonical scheme://authority.
func (w *Web) Origin(h int) string { return "http://" + w.HostPort(h) }

// HostOf maps an authority (host[:port], a name or an address, any case)
// back to its host index (-1 if not of this web).
func (w *Web) HostOf(authority string) int {
	host, port, ok := strings.Cut(authority, ":")
	if !ok {
		port = "80"
	}
	if port != strconv.Itoa(w.cfg.Port) {
		return -1
	}
	return w.hostNamed(host)
}

// hostNamed maps a host name or address, any case, to its host index (-1
// if not of this web).
func (w *Web) hostNamed(host string) int {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if w.cfg.Discovery {
		if n, ok := strings.CutPrefix(host, "site"); ok {
			if n, ok := strings.CutSuffix(n, ".test"); ok {
				h, err := strconv.Atoi(n)
				if err == nil && h >= 0 && h < w.cfg.Hosts && strconv.Itoa(h) == n {
					return h
				}
			}
		}
	}
	var a, b, x, y int
	if n, err := fmt.Sscanf(host, "%d.%d.%d.%d", &a, &b, &x, &y); n != 4 || err != nil || a != 127 || b != w.cfg.Block {
		return -1
	}
	h := (x-1)*250 + (y - 1)
	if x < 1 || y < 1 || y > 250 || h >= w.cfg.Hosts {
		return -1
	}
	return h
}

// Seeds are the home pages of the first SeedHosts hosts.
func (w *Web) Seeds() []string {
	s := make([]string, w.cfg.SeedHosts)
	for h := range s {
		s[h] = w.Origin(h) + "/"
	}
	return s
}

// HostLatency is how long host h waits before answering.
func (w *Web) HostLatency(h int) time.Duration { return w.latencies[h] }

// Robots is every host's robots.txt.
func (w *Web) Robots() string {
	if len(w.cfg.Dirs) > 0 {
		return filesRobots
	}
	return robotsDisallow
}

// Disallowed reports whether robots.txt forbids path.
func Disallowed(path string) bool { return strings.HasPrefix(path, privatePrefix) }

// Kind classifies what a path serves.
type Kind int

const (
	KindNotFound Kind = iota // 404, including /gone/N
	KindPage                 // 200 HTML with links
	KindRedirect             // 301 to Target
	KindRobots               // robots.txt
	KindTrap                 // a trap URL (trap mode): a page or a redirect, never ending
)

// Resource is what one path of one host serves.
type Resource struct {
	Kind   Kind
	Status int
	Target string // redirect Location (absolute URL)
	page   int    // page index for KindPage (-1 for trap pages)
	salt   uint64
}

// Resolve says what host h serves at path. An empty query serves what the
// path without it serves.
func (w *Web) Resolve(h int, path string) Resource {
	if len(w.cfg.Dirs) > 0 {
		return w.resolveFile(h, path)
	}
	path = strings.TrimSuffix(path, "?")
	notFound := Resource{Kind: KindNotFound, Status: 404}
	n, rest, ok := w.pathIndex(path)
	switch {
	case path == "/robots.txt":
		return Resource{Kind: KindRobots, Status: 200}
	case path == "/":
		return Resource{Kind: KindPage, Status: 200, page: 0}
	case ok && rest == "/p/" && n > 0:
		return Resource{Kind: KindPage, Status: 200, page: n}
	case ok && rest == "/old/":
		return Resource{Kind: KindRedirect, Status: 301, Target: w.Origin(h) + pagePath(n)}
	case ok && rest == privatePrefix:
		return Resource{Kind: KindPage, Status: 200, page: n, salt: 1}
	case ok && rest == "/gone/":
		return notFound
	}
	if !w.cfg.Traps {
		return notFound
	}
	switch {
	case ok && rest == "/chain/":
		return Resource{Kind: KindTrap, Status: 302, Target: w.Origin(h) + "/chain/" + strconv.Itoa(n+1)}
	case strings.HasPrefix(path, "/cal/"), strings.HasPrefix(path, "/grow/"):
		return Resource{Kind: KindTrap, Status: 200, page: -1}
	}
	return notFound
}

// pathIndex splits "/p/12" into 12 and "/p/"; ok only for a valid index.
func (w *Web) pathIndex(path string) (int, string, bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 1 {
		return 0, "", false
	}
	n, err := strconv.Atoi(path[i+1:])
	if err != nil || n < 0 || n >= w.cfg.Pages || strconv.Itoa(n) != path[i+1:] {
		if path[:i+1] == "/chain/" && err == nil && n >= 0 {
			return n, "/chain/", true
		}
		return 0, "", false
	}
	return n, path[:i+1], true
}

func pagePath(n int) string {
	if n == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(n)
}

// Link is one href of a page: Href as written in the HTML, URL absolute and
// canonical.
type Link struct {
	Href string
	URL  string
}

// Links returns the links of the page at host h, path p, in page order,
// repeats included; nil when the path is not a page.
func (w *Web) Links(h int, path string) []Link {
	res := w.Resolve(h, path)
	if len(w.cfg.Dirs) > 0 {
		if res.Kind != KindPage {
			return nil
		}
		return w.fileLinks(h, path)
	}
	switch {
	case res.Kind == KindTrap && res.Status == 200:
		return w.trapLinks(h, path)
	case res.Kind != KindPage:
		return nil
	}
	n := res.page
	r := newRNG(w.cfg.Seed, uint64(h)+1, uint64(n)<<1|res.salt)
	k := int(math.Round(linksMedian * math.Exp(linksSigma()*r.normal())))
	k = min(max(k, 2), maxLinks)
	distinct := max(2, int(math.Round(float64(k)*(1-repeatShare))))
	links := make([]Link, 0, k)
	own := w.Origin(h)
	local := func(p string) Link { return Link{Href: p, URL: own + p} }
	// The home page and the next page are always linked, so every page of a
	// host is reachable from its home page.
	links = append(links, local("/"))
	if n+1 < w.cfg.Pages {
		links = append(links, local(pagePath(n+1)))
	}
	// In the discovery mode every home page also links the next host's, so
	// every host is reachable from the one seed.
	if w.cfg.Discovery && n == 0 && res.salt == 0 && w.cfg.Hosts > 1 {
		next := w.Origin((h+1)%w.cfg.Hosts) + "/"
		links = append(links, Link{Href: next, URL: next})
	}
	if w.cfg.Traps && r.float() < trapPageShare {
		switch r.intn(3) {
		case 0:
			links = append(links, local("/cal/2026/01/"))
		case 1:
			links = append(links, local("/grow/a/"))
		default:
			links = append(links, local("/chain/0"))
		}
	}
	topic := w.topic(h, n)
	seen := make(map[string]bool, distinct)
	for _, l := range links {
		seen[l.URL] = true
	}
	add := func(l Link) {
		if !seen[l.URL] {
			seen[l.URL] = true
			links = append(links, l)
		}
	}
	// A small web has fewer distinct targets than a page wants; stop trying.
	for tries := 0; len(links) < distinct && tries < 20*distinct; tries++ {
		if r.float() >= sameHostShare && w.cfg.Hosts > 1 {
			t := w.hostRank[w.hostZipf.sample(r)]
			if t == h {
				continue
			}
			p := "/"
			if r.float() >= 0.3 {
				p = pagePath(w.pageZipf.sample(r))
			}
			u := w.Origin(t) + p
			add(Link{Href: u, URL: u})
			continue
		}
		m := r.intn(w.cfg.Pages)
		if r.float() < 0.5 {
			m = w.pageZipf.sample(r)
		}
		if w.cfg.Topics > 0 && r.float() < topicalShare {
			m = w.sameTopic(h, m, topic)
		}
		// Redirects, 404s and private pages are a few per host (1 in 20
		// pages each), linked from many pages, as on a real site.
		special := strconv.Itoa(m % max(1, w.cfg.Pages/20))
		switch x := r.float(); {
		case x < redirectShare:
			add(local("/old/" + special))
		case x < redirectShare+goneShare:
			add(local("/gone/" + special))
		case x < redirectShare+goneShare+privateShare:
			add(local(privatePrefix + special))
		default:
			add(local(pagePath(m)))
		}
	}
	distinct = len(links)
	for len(links) < k {
		links = append(links, links[r.intn(distinct)])
	}
	if w.cfg.Discovery {
		links = w.writeHrefs(h, path, res, links)
	}
	return links
}

// linksSigma makes a log-normal with median linksMedian have mean linksMean.
func linksSigma() float64 { return math.Sqrt(2 * math.Log(linksMean/linksMedian)) }

// Topic is the topic of page n of host h in the topical mode (-1 otherwise).
func (w *Web) Topic(h int, path string) int {
	res := w.Resolve(h, path)
	if res.Kind != KindPage {
		return -1
	}
	return w.topic(h, res.page)
}

func (w *Web) topic(h, n int) int {
	if w.cfg.Topics == 0 {
		return -1
	}
	return (h + n) % w.cfg.Topics
}

// sameTopic moves page index m down to the nearest index with topic t (or
// up, near the start); m itself when no such page exists.
func (w *Web) sameTopic(h, m, t int) int {
	d := ((w.topic(h, m) - t) + w.cfg.Topics) % w.cfg.Topics
	if m-d >= 0 {
		return m - d
	}
	if m2 := m - d + w.cfg.Topics; m2 < w.cfg.Pages {
		return m2
	}
	return m
}

// trapLinks are the links of a trap page: the next month of an endless
// calendar, or a URL one segment longer.
func (w *Web) trapLinks(h int, path string) []Link {
	own := w.Origin(h)
	var next string
	if rest, ok := strings.CutPrefix(path, "/cal/"); ok {
		var y, m int
		if n, _ := fmt.Sscanf(rest, "%d/%d/", &y, &m); n == 2 {
			y, m = y+m/12, m%12+1
			next = fmt.Sprintf("/cal/%d/%02d/", y, m)
		}
	} else {
		next = path + "a/"
	}
	if next == "" {
		return []Link{{Href: "/", URL: own + "/"}}
	}
	return []Link{{Href: "/", URL: own + "/"}, {Href: next, URL: own + next}}
}

// BodySize is the HTML size of page (h, path), log-normal around 16 KB.
func (w *Web) BodySize(h int, path string) int {
	path = strings.TrimSuffix(path, "?")
	r := newRNG(w.cfg.Seed, uint64(h)+1, hashString(path)|1<<63)
	return min(max(int(bodyMedian*math.Exp(bodySigma*r.normal())), 512), maxBody)
}
