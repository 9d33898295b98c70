// Package resolver is the crawler's DNS resolver: a cached, non-blocking stub
// resolver after Chen and Yan, "a cached non-blocking asynchronous DNS resolver
// for crawlers" (Software Guide, 2009). See docs/resolver.md.
//
// A lookup is answered from an LRU name cache when it can be; otherwise one
// network lookup per name is in flight at a time (A and AAAA in parallel, over
// UDP, TCP after truncation), however many callers wait for it, and any
// number of names are looked up at once.
package resolver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Defaults, after the paper where it gives a value.
const (
	DefaultCacheSize   = 50000              // the paper's name cache size
	DefaultRefresh     = 1800 * time.Second // the paper's refresh period
	DefaultNegativeTTL = 30 * time.Second
	DefaultTimeout     = 2 * time.Second
	DefaultAttempts    = 2
	DefaultMaxInFlight = 1024 // the paper's send queue size

	resolvConf     = "/etc/resolv.conf"
	fallbackServer = "127.0.0.53:53" // systemd-resolved's stub listener
)

// Options configure a Resolver. New replaces zero (or negative, where not
// said otherwise) numeric fields by their defaults.
//
// RespectTTL is a plain bool, so the zero Options ignore DNS TTLs (the paper's
// behaviour: answers live Refresh, whatever their TTL). Start from
// DefaultOptions to get TTLs respected.
type Options struct {
	// Servers are "ip:port" addresses of recursive DNS servers, tried in
	// order ("ip" alone means port 53). Empty: the nameservers of
	// /etc/resolv.conf, or 127.0.0.53:53 when it has none.
	Servers []string
	// CacheSize is the number of names cached, answers and failures alike.
	CacheSize int
	// Refresh is the longest a cached answer is used; the next lookup after
	// that goes to the network again.
	Refresh time.Duration
	// RespectTTL makes the record TTLs an upper bound too: an answer lives
	// min(Refresh, smallest TTL of its records).
	RespectTTL bool
	// NegativeTTL is how long a failure (NXDOMAIN, no address, SERVFAIL,
	// timeout) is cached. With RespectTTL, the zone's SOA negative TTL caps
	// it. Negative: failures are not cached.
	NegativeTTL time.Duration
	// Timeout bounds one query to one server.
	Timeout time.Duration
	// Attempts is the number of rounds over Servers before giving up.
	Attempts int
	// MaxInFlight bounds the names being looked up on the network at once;
	// more wait (each in-flight name holds two sockets).
	MaxInFlight int
}

// DefaultOptions returns the recommended options: every default, RespectTTL on.
func DefaultOptions() Options {
	return Options{
		CacheSize:   DefaultCacheSize,
		Refresh:     DefaultRefresh,
		RespectTTL:  true,
		NegativeTTL: DefaultNegativeTTL,
		Timeout:     DefaultTimeout,
		Attempts:    DefaultAttempts,
		MaxInFlight: DefaultMaxInFlight,
	}
}

// Resolver looks up host addresses. It is safe for concurrent use.
//
// Concurrency: mu guards cache and flights, and is never held during network
// I/O. Keeping both under one mutex makes "not cached, so join or start a
// flight" and "flight done, so cache its answer and retire it" atomic: no
// caller can miss both the cache and the flight. Counters are atomics. All
// other fields are set by New and read-only afterwards.
type Resolver struct {
	servers    []string
	refresh    time.Duration
	respectTTL bool
	negTTL     time.Duration
	timeout    time.Duration
	attempts   int

	udp, tcp *dns.Client
	sem      chan struct{}    // a token per network lookup in flight (MaxInFlight)
	now      func() time.Time // the clock for cache expiry; tests replace it

	mu      sync.Mutex
	cache   *lru               // guarded by mu
	flights map[string]*flight // guarded by mu

	stats counters
}

// New returns a Resolver configured by o.
func New(o Options) (*Resolver, error) {
	servers, err := serverList(o.Servers)
	if err != nil {
		return nil, err
	}
	o = withDefaults(o)
	r := &Resolver{
		servers:    servers,
		refresh:    o.Refresh,
		respectTTL: o.RespectTTL,
		negTTL:     o.NegativeTTL,
		timeout:    o.Timeout,
		attempts:   o.Attempts,
		udp:        &dns.Client{Net: "udp", Timeout: o.Timeout},
		tcp:        &dns.Client{Net: "tcp", Timeout: o.Timeout},
		sem:        make(chan struct{}, o.MaxInFlight),
		now:        time.Now,
		cache:      newLRU(o.CacheSize),
		flights:    make(map[string]*flight),
	}
	return r, nil
}

func withDefaults(o Options) Options {
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.NegativeTTL == 0 {
		o.NegativeTTL = DefaultNegativeTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	return o
}

// serverList checks the configured servers, or reads the system's.
func serverList(in []string) ([]string, error) {
	if len(in) == 0 {
		return systemServers(), nil
	}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(s, "53")
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return nil, fmt.Errorf("resolver: DNS server %q is not an ip:port", s)
		}
		out = append(out, ap.String())
	}
	return out, nil
}

func systemServers() []string {
	conf, err := dns.ClientConfigFromFile(resolvConf)
	if err != nil || len(conf.Servers) == 0 {
		return []string{fallbackServer}
	}
	out := make([]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		out = append(out, net.JoinHostPort(s, conf.Port))
	}
	return out
}

// LookupNetIP returns the IPv4 then the IPv6 addresses of host. An IP
// literal is returned as is. Errors are *net.DNSError values that unwrap to
// ErrNotFound, ErrServerFailure, ErrTimeout or ctx's error.
//
// ctx bounds this caller's wait only: a lookup other callers also wait for
// goes on, and its answer is cached.
func (r *Resolver) LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	r.stats.lookups.Add(1)
	if mayBeIPLiteral(host) {
		if ip, err := netip.ParseAddr(host); err == nil {
			return []netip.Addr{ip}, nil
		}
	}
	key := cacheKey(host)
	r.mu.Lock()
	n, cached := r.cache.get(key)
	if cached && r.now().Before(n.val.expires) {
		e := n.val
		r.mu.Unlock()
		return r.fromCache(host, e)
	}
	f, joined := r.flights[key]
	if !joined {
		// Checked here, not before the cache: only valid names are cached,
		// and hits need not pay for the check.
		if !validName(key) {
			r.mu.Unlock()
			r.stats.errors.Add(1)
			return nil, failNotFound.forHost(host)
		}
		f = r.startFlight(key)
	}
	f.waiters++
	r.mu.Unlock()

	switch {
	case joined:
		r.stats.coalesced.Add(1)
	case cached:
		r.stats.misses.Add(1)
		r.stats.refreshes.Add(1)
	default:
		r.stats.misses.Add(1)
	}
	return r.wait(ctx, host, key, f)
}

// mayBeIPLiteral is a cheap test that spares host names a failing (and
// allocating) netip.ParseAddr: an IPv4 literal ends in a digit, which no top
// level domain does, and an IPv6 literal has a colon.
func mayBeIPLiteral(host string) bool {
	if host == "" {
		return false
	}
	last := host[len(host)-1]
	return '0' <= last && last <= '9' || strings.IndexByte(host, ':') >= 0
}

// cacheKey is the canonical form of a host name: lower case, no final dot.
func cacheKey(host string) string {
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// validName reports whether key can be looked up in the DNS.
func validName(key string) bool {
	if key == "" || len(key) > 253 || strings.HasPrefix(key, ".") {
		return false
	}
	_, ok := dns.IsDomainName(key)
	return ok
}

func (r *Resolver) fromCache(host string, e entry) ([]netip.Addr, error) {
	if e.fail != nil {
		r.stats.negHits.Add(1)
		r.stats.errors.Add(1)
		return nil, e.fail.forHost(host)
	}
	r.stats.hits.Add(1)
	return slices.Clone(e.addrs), nil // callers may sort or trim their copy
}

// Stats returns a snapshot of the counters.
func (r *Resolver) Stats() Stats {
	s := r.stats.snapshot()
	r.mu.Lock()
	s.Entries = r.cache.len()
	r.mu.Unlock()
	return s
}
