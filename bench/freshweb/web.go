// Package freshweb is a web whose pages change at known rates, for
// measuring how fresh a continuous crawl keeps its copies (issue 21).
//
// H hosts, each on its own loopback address (127.Block.x.y, so that per-host
// politeness applies to each), serve N pages each: "/" links every page of
// its host, every page links "/" and its neighbours, so one seed per host
// reaches all. Each page changes as a Poisson process at its own rate,
// log-uniform between one change per ChangeMin and one per ChangeMax
// (hours to days of a real web, scaled down to seconds); a share of pages
// (Static) never changes. A page's HTML carries its version (the number of
// changes so far) and filler; its ETag names the version and Last-Modified
// is the time of its last change, and conditional requests (If-None-Match,
// If-Modified-Since) are answered 304 when the copy they name is current.
//
// Change times are drawn lazily, page by page, from a seeded generator and
// rounded up to whole seconds (so that Last-Modified, which has a one-second
// resolution, dates every version exactly and If-Modified-Since is never
// wrong): the same Config gives the same pages, rates and change times
// relative to Start, whatever order they are asked in. The web has existed
// since Born, History before Start, so that at Start every page already has
// a past (a Last-Modified a crawler can read, a version that is not 0).
//
// Measure turns the server's request log and the pages' change histories
// into Cho and Garcia-Molina's average freshness and age; theory.go has
// what the uniform policy should score and what no policy can pass.
package freshweb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config describes a web. The zero value of every field but Validators
// takes a default.
type Config struct {
	Seed  uint64 // everything is derived from it
	Hosts int    // default 10
	Pages int    // pages per host, "/" included; default 50
	// ChangeMin and ChangeMax bound the pages' mean times between changes:
	// a changing page changes on average once per a time drawn log-uniformly
	// between them. Defaults 5 s and 10 min.
	ChangeMin, ChangeMax time.Duration
	// Static is the share of pages that never change, in [0, 1]; a
	// negative value means none (0 takes the default, 0.2).
	Static float64
	// BodySize is the median HTML size of a page in bytes (log-normal,
	// each page its own, capped at 8x); default 12 KiB.
	BodySize int
	// Validators says which validators the pages carry and which
	// conditional requests are honoured: ValidatorsAll (default: ETag and
	// Last-Modified), ValidatorsETag, ValidatorsLastModified or
	// ValidatorsNone (every request gets the whole page, so a crawler can
	// only tell a change by the body).
	Validators string
	// Block is the second octet of the hosts' addresses, 127.Block.x.y;
	// default 3 (websim's webs default to 1).
	Block int
	// Port is every host's port; 0 lets each host take a free one.
	Port int
	// Start is the web's time origin, rounded down to a whole second;
	// default now. Change times are the same relative to it for a seed.
	Start time.Time
	// History is how long before Start the web was born (default ten
	// times ChangeMax): long enough that nearly every changing page has
	// changed by Start.
	History time.Duration
	// Now is the server's clock (default time.Now); tests replace it.
	Now func() time.Time
}

// Validator modes of Config.Validators.
const (
	ValidatorsAll          = "all"
	ValidatorsETag         = "etag"
	ValidatorsLastModified = "last-modified"
	ValidatorsNone         = "none"
)

// Web is a configured web with its pages' change histories.
type Web struct {
	cfg   Config
	born  time.Time
	pages []*page
}

// page is one page: its rate and the part of its change history drawn so
// far.
type page struct {
	rate float64 // changes per second; 0: never changes
	size int     // HTML bytes, about

	mu      sync.Mutex
	rng     *rand.Rand
	cursor  float64 // seconds since Born of the last drawn (unrounded) change
	changes []int64 // whole seconds since Born at which versions 1, 2, ... began
}

// New returns the web of cfg with defaults filled in.
func New(cfg Config) (*Web, error) {
	if cfg.Hosts == 0 {
		cfg.Hosts = 10
	}
	if cfg.Pages == 0 {
		cfg.Pages = 50
	}
	if cfg.ChangeMin == 0 {
		cfg.ChangeMin = 5 * time.Second
	}
	if cfg.ChangeMax == 0 {
		cfg.ChangeMax = 10 * time.Minute
	}
	if cfg.Static == 0 {
		cfg.Static = 0.2
	} else if cfg.Static < 0 {
		cfg.Static = 0
	}
	if cfg.BodySize == 0 {
		cfg.BodySize = 12 << 10
	}
	if cfg.Validators == "" {
		cfg.Validators = ValidatorsAll
	}
	if cfg.Block == 0 {
		cfg.Block = 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Start.IsZero() {
		cfg.Start = cfg.Now()
	}
	cfg.Start = cfg.Start.Truncate(time.Second)
	if cfg.History == 0 {
		cfg.History = 10 * cfg.ChangeMax
	}
	cfg.History = cfg.History.Round(time.Second)
	switch {
	case cfg.Hosts < 1 || cfg.Hosts > 250*250 || cfg.Pages < 1:
		return nil, fmt.Errorf("freshweb: %d hosts x %d pages: want 1 to 62,500 hosts and at least one page", cfg.Hosts, cfg.Pages)
	case cfg.ChangeMin < time.Second || cfg.ChangeMax < cfg.ChangeMin:
		return nil, fmt.Errorf("freshweb: change times %s to %s: want at least 1s (versions are dated to the second), the maximum at least the minimum", cfg.ChangeMin, cfg.ChangeMax)
	case cfg.Static > 1:
		return nil, fmt.Errorf("freshweb: static share %g: want at most 1", cfg.Static)
	case cfg.BodySize < 512:
		return nil, fmt.Errorf("freshweb: body size %d: want at least 512 bytes", cfg.BodySize)
	case cfg.Block < 1 || cfg.Block > 254 || cfg.Port < 0 || cfg.Port > 65535:
		return nil, fmt.Errorf("freshweb: address block %d, port %d: want 1 to 254 and 0 to 65535", cfg.Block, cfg.Port)
	case cfg.History < 0:
		return nil, fmt.Errorf("freshweb: negative history %s", cfg.History)
	}
	switch cfg.Validators {
	case ValidatorsAll, ValidatorsETag, ValidatorsLastModified, ValidatorsNone:
	default:
		return nil, fmt.Errorf("freshweb: validators %q: want all, etag, last-modified or none", cfg.Validators)
	}
	w := &Web{cfg: cfg, born: cfg.Start.Add(-cfg.History), pages: make([]*page, cfg.Hosts*cfg.Pages)}
	lo, hi := math.Log(1/cfg.ChangeMax.Seconds()), math.Log(1/cfg.ChangeMin.Seconds())
	for id := range w.pages {
		// The page's traits and its change times come from two streams,
		// so that drawing history never shifts a trait.
		traits := rand.New(rand.NewPCG(cfg.Seed, uint64(id)<<1))
		p := &page{rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id)<<1|1))}
		if unit(traits) >= cfg.Static {
			p.rate = math.Exp(lo + unit(traits)*(hi-lo))
		}
		z := normal(traits)
		p.size = int(float64(cfg.BodySize) * math.Exp(0.5*z))
		p.size = min(max(p.size, 512), 8*cfg.BodySize)
		w.pages[id] = p
	}
	return w, nil
}

// unit is a uniform deviate in [0, 1), the same for a seed on every Go
// version (math/rand/v2's PCG is a fixed algorithm; its float helpers are
// not promised to stay).
func unit(r *rand.Rand) float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// normal is a standard normal deviate (Box-Muller).
func normal(r *rand.Rand) float64 {
	return math.Sqrt(-2*math.Log(1-unit(r))) * math.Cos(2*math.Pi*unit(r))
}

// Config returns the configuration with defaults filled in.
func (w *Web) Config() Config { return w.cfg }

// Start is the web's time origin (Config.Start, whole seconds).
func (w *Web) Start() time.Time { return w.cfg.Start }

// Born is when the web's history begins: every page is version 0 then.
func (w *Web) Born() time.Time { return w.born }

// Len is the number of pages, hosts x pages per host; page ids are
// host*Pages + index.
func (w *Web) Len() int { return len(w.pages) }

// ID is the id of page i of host h.
func (w *Web) ID(h, i int) int { return h*w.cfg.Pages + i }

// Rate is page id's mean number of changes per second (0: never changes).
func (w *Web) Rate(id int) float64 { return w.pages[id].rate }

// Rates are every page's rates, by id.
func (w *Web) Rates() []float64 {
	out := make([]float64, len(w.pages))
	for id, p := range w.pages {
		out[id] = p.rate
	}
	return out
}

// Path is the path of page i of a host: "/" for 0, "/p/I.html" otherwise.
func Path(i int) string {
	if i == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(i) + ".html"
}

// PageOf maps a request path to a page index of a host (-1 if not a page).
func (w *Web) PageOf(path string) int {
	if path == "/" {
		return 0
	}
	n, ok := strings.CutPrefix(path, "/p/")
	if !ok {
		return -1
	}
	n, ok = strings.CutSuffix(n, ".html")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 || i >= w.cfg.Pages || strconv.Itoa(i) != n {
		return -1
	}
	return i
}

// drawUntil draws page p's changes until one lies beyond sec seconds since
// Born, or until it has n changes; p.mu is held.
func (p *page) drawUntil(sec float64, n int) {
	for p.cursor <= sec || len(p.changes) < n {
		p.cursor += -math.Log(1-unit(p.rng)) / p.rate
		p.changes = append(p.changes, int64(math.Ceil(p.cursor)))
	}
}

// Version is page id's version at t: the number of its changes at or
// before t (0 before Born).
func (w *Web) Version(id int, t time.Time) int {
	v, _ := w.versionAt(id, t)
	return v
}

// versionAt is page id's version at t and when that version began (Born
// for version 0).
func (w *Web) versionAt(id int, t time.Time) (int, time.Time) {
	p := w.pages[id]
	if p.rate == 0 || t.Before(w.born) {
		return 0, w.born
	}
	sec := t.Sub(w.born).Seconds()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawUntil(sec, 0)
	// Changes are whole seconds: version v+1 began at changes[v].
	v := sort.Search(len(p.changes), func(k int) bool { return float64(p.changes[k]) > sec })
	if v == 0 {
		return 0, w.born
	}
	return v, w.born.Add(time.Duration(p.changes[v-1]) * time.Second)
}

// LastModified is when page id's version at t began: the time of its last
// change at or before t, Born if none.
func (w *Web) LastModified(id int, t time.Time) time.Time {
	_, m := w.versionAt(id, t)
	return m
}

// Superseded is when version v of page id stopped being current (the time
// of its next change); ok is false for a page that never changes.
func (w *Web) Superseded(id, v int) (t time.Time, ok bool) {
	p := w.pages[id]
	if p.rate == 0 {
		return time.Time{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawUntil(-1, v+1)
	return w.born.Add(time.Duration(p.changes[v]) * time.Second), true
}

// Changes are page id's change times in [from, to).
func (w *Web) Changes(id int, from, to time.Time) []time.Time {
	p := w.pages[id]
	if p.rate == 0 || !to.After(w.born) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawUntil(to.Sub(w.born).Seconds(), 0)
	var out []time.Time
	for _, c := range p.changes {
		if t := w.born.Add(time.Duration(c) * time.Second); !t.Before(from) && t.Before(to) {
			out = append(out, t)
		}
	}
	return out
}

// ETag is the entity tag of version v of page id.
func ETag(id, v int) string { return fmt.Sprintf("\"%x-%d\"", id, v) }

// filler pads pages to their size; slices of it are cheap.
var filler = strings.Repeat("The quick brown fox jumps over the lazy dog while the crawler keeps its copies fresh. ", 1200)

// Body is the HTML of version v of page i of host h: its title, its
// version and when it began, its links and filler up to the page's size.
// The links are the same in every version.
func (w *Web) Body(h, i, v int, modified time.Time) []byte {
	id := w.ID(h, i)
	size := w.pages[id].size
	b := make([]byte, 0, size+512)
	b = fmt.Appendf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>host %d page %d</title></head>\n<body>\n", h, i)
	b = fmt.Appendf(b, "<h1>Page %d of host %d</h1>\n<p class=\"version\">version %d, since %s</p>\n<nav>\n", i, h, v, modified.UTC().Format(time.RFC3339))
	link := func(j int) { b = fmt.Appendf(b, "<a href=\"%s\">page %d</a>\n", Path(j), j) }
	if i == 0 {
		for j := 1; j < w.cfg.Pages; j++ {
			link(j)
		}
	} else {
		link(0)
		if i > 1 {
			link(i - 1)
		}
		if i+1 < w.cfg.Pages {
			link(i + 1)
		}
	}
	b = append(b, "</nav>\n<p>"...)
	for n, off := size-len(b)-20, (id*7919)%len(filler); n > 0; off = 0 {
		k := min(n, len(filler)-off)
		b = append(b, filler[off:off+k]...)
		n -= k
	}
	return append(b, "</p>\n</body></html>\n"...)
}

// IP is host h's loopback address, 127.Block.x.y.
func (w *Web) IP(h int) string {
	return fmt.Sprintf("127.%d.%d.%d", w.cfg.Block, h/250+1, h%250+1)
}
