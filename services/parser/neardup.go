package parser

// Near-duplicate pages: each HTML page's text is fingerprinted (pkg/simhash)
// and looked up among the fingerprints of its host's earlier pages; a page
// within the distance of one is marked near_duplicate_of that page's URL.

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/simhash"
)

// NearDuplicates configures near-duplicate detection.
type NearDuplicates struct {
	// Distance is the Hamming distance (bits) at or under which two pages'
	// fingerprints make them near-duplicates (0 to simhash.MaxDistance).
	Distance int
	// PerHost is how many earlier pages of a host are remembered; Hosts how
	// many hosts, the least recently parsed forgotten first. Together they
	// bound the memory: about 150 bytes a page.
	PerHost, Hosts int
	// SkipLinks: the links of a near-duplicate page are not followed. It
	// cuts traps that serve one page under endless URLs (calendars, session
	// paths), at the price of links found only on a near-duplicate.
	SkipLinks bool
}

// Defaults of NearDuplicates, as the crawl's flags give them.
const (
	DefaultNearDuplicatePerHost = 1000
	DefaultNearDuplicateHosts   = 128
)

// Validate says what is wrong with n, in the flags' words.
func (n NearDuplicates) Validate() error {
	if n.Distance < 0 || n.Distance > simhash.MaxDistance {
		return fmt.Errorf("--near-duplicate-distance %d: give 0 to %d bits (%d is the default)", n.Distance, simhash.MaxDistance, simhash.DefaultDistance)
	}
	if n.PerHost < 1 || n.Hosts < 1 {
		return fmt.Errorf("--near-duplicate-window %d pages per host, %d hosts: both must be at least 1", n.PerHost, n.Hosts)
	}
	return nil
}

// nearDups holds one fingerprint index per host, in least-recently-used
// order. It is shared by the parser's workers: mu guards the host list,
// each host's index has its own lock, so pages of different hosts do not
// wait for each other's lookups.
type nearDups struct {
	o     NearDuplicates
	mu    sync.Mutex
	hosts map[string]*list.Element // of *hostPrints
	lru   *list.List               // most recent at the front
}

type hostPrints struct {
	host string
	mu   sync.Mutex
	x    *simhash.Index
}

func newNearDups(o NearDuplicates) (*nearDups, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &nearDups{o: o, hosts: make(map[string]*list.Element), lru: list.New()}, nil
}

// check returns the URL of an earlier page of host within the distance of
// fp, or "" after remembering url's fingerprint. A page is never its own
// near-duplicate: a redelivered page finds itself and stays an original.
// Near-duplicates are not remembered: a cluster is represented by its
// first page, so that every member names the same original.
func (n *nearDups) check(host, url string, fp uint64) string {
	h := n.host(host)
	h.mu.Lock()
	defer h.mu.Unlock()
	if of, _, ok := h.x.Nearest(fp); ok {
		if of == url {
			return ""
		}
		return of
	}
	h.x.Add(fp, url)
	return ""
}

// markNearDuplicate fingerprints a page's text into doc and names the
// earlier page it nearly duplicates, when near-duplicates are on. A page
// without words has no fingerprint: every empty page would match.
func (s *Service) markNearDuplicate(doc *messages.Parsed, host, text string) {
	if s.dups == nil {
		return
	}
	fp := simhash.Fingerprint(text)
	if fp == 0 {
		return
	}
	doc.SimHash = fmt.Sprintf("%016x", fp)
	if of := s.dups.check(host, doc.URL, fp); of != "" {
		doc.NearDuplicateOf = of
		s.Stats.NearDuplicates.Add(1)
	}
}

func (n *nearDups) host(host string) *hostPrints {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.hosts[host]; ok {
		n.lru.MoveToFront(e)
		return e.Value.(*hostPrints)
	}
	if n.lru.Len() >= n.o.Hosts {
		oldest := n.lru.Back()
		n.lru.Remove(oldest)
		delete(n.hosts, oldest.Value.(*hostPrints).host)
	}
	x, _ := simhash.NewIndex(n.o.Distance, n.o.PerHost) // arguments validated in newNearDups
	h := &hostPrints{host: host, x: x}
	n.hosts[host] = n.lru.PushFront(h)
	return h
}
