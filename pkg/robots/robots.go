// Package robots parses robots.txt files (RFC 9309) and answers whether a
// crawler may fetch a URL, the way Google's reference implementation
// (github.com/google/robotstxt, robots.cc) does: same line syntax, same
// typo-tolerant keys, same group selection, same longest-match rule with
// Allow winning ties, same '*' and '$' patterns and the same %-encoding of
// rule patterns. It passes every vector of the conformance suite transcribed
// from Google's robots_test.cc (../shared/conformance/robots); see
// docs/robots.md.
//
// Why not an existing library: github.com/jimsmart/grobotstxt is a port of
// robots.cc but normalises URLs through net/url (2 of the 145 upstream cases
// fail) and re-parses the whole file on every check (about 170 µs for a
// 13 KB file); github.com/temoto/robotstxt fails 20 cases (it rejects files
// with rules before the first user-agent, among others). A crawler keeps one
// robots.txt per host for hours and checks every URL of the host against it,
// so this package parses once and precompiles each group: a check is a map
// lookup and a scan of the group's rules, longest first, mostly skipped by a
// per-byte directory and a byte-pair filter; it allocates nothing and uses
// no regular expression (a few hundred ns for a 13 KB file, docs/robots.md).
//
// A *Robots is immutable after Parse and safe for concurrent use.
//
// Two things are the caller's job, as with Google's matcher: the user agent
// passed to Allowed is a product token such as "Trawler" (see ProductToken),
// not a whole User-Agent header, and the URL must already be %-encoded the
// way it will be requested.
package robots

import (
	"slices"
	"time"
)

// MaxSize is the most of a robots.txt that is parsed: 500 KiB, the size
// Google reads and RFC 9309 section 2.5 asks crawlers to handle at least.
// Parse ignores what follows, and also the line that straddles the limit,
// so a cut rule never widens what is allowed. Fetchers may stop reading at
// MaxSize bytes.
const MaxSize = 500 << 10

// Robots is a parsed robots.txt. The zero value allows everything.
type Robots struct {
	agents   map[string][]*group // lower-cased product token -> the groups naming it
	global   []*group            // groups naming "*"
	sitemaps []string
	stats    stats
}

// group is one user-agent group, compiled. Its rules are in sections, each
// sorted by compareRules: rules[:nscan] are checked for every path; the rest
// are filed by the byte after their leading '/', so a path "/p..." checks
// only the section keyed 'p': rules[starts[i]:starts[i+1]] where keys[i]
// is 'p'. Small groups are one section.
type group struct {
	rules    []rule
	nscan    int32
	keys     string
	starts   []int32
	delay    time.Duration
	hasDelay bool
}

// stats are the parse-level counters robots_test.cc checks.
type stats struct {
	valid, unknown, lastLine int
}

var (
	allowAll    = &Robots{}
	disallowAll = &Robots{global: []*group{{rules: []rule{compileRule("/", false)}, nscan: 1}}}
)

// AllowAll returns rules that allow every URL to every agent. The value is
// shared and immutable.
func AllowAll() *Robots { return allowAll }

// DisallowAll returns rules that disallow every URL to every agent. The
// value is shared and immutable.
func DisallowAll() *Robots { return disallowAll }

// ForStatus turns the outcome of fetching /robots.txt into rules, following
// RFC 9309 section 2.3.1. status is the final HTTP status code, or 0 when
// the fetch failed at the network level (DNS, connect, TLS, timeout).
//
//   - 2xx: body is parsed.
//   - 3xx: should not reach here. The caller follows up to five redirects
//     (2.3.1.2) and passes the final answer; a 3xx that still arrives means
//     the chain did not end, which the RFC lets crawlers treat as
//     unavailable: everything is allowed.
//   - 4xx, 401 and 403 included: "unavailable" (2.3.1.3), everything is
//     allowed.
//   - 5xx, 0 and any other code: "unreachable" (2.3.1.4), everything is
//     disallowed and retryLater is true. How long to keep retrying before
//     using a cached copy or giving up on the host is the caller's policy.
func ForStatus(status int, body []byte) (r *Robots, retryLater bool) {
	switch {
	case status >= 200 && status <= 299:
		return Parse(body), false
	case status == 429:
		// Too Many Requests is a 4xx, but it says "come back later", not
		// "nothing here": treat it like a 5xx, as Google does.
		return DisallowAll(), true
	case status >= 300 && status <= 499:
		return AllowAll(), false
	default:
		return DisallowAll(), true
	}
}

// Allowed reports whether userAgent may fetch url. url is an absolute URL
// or a path; only its path, params and query count (see PathParamsQuery).
// userAgent is a product token, matched case-insensitively against the
// user-agent lines; the "*" groups apply only when no group names it.
// A nil *Robots allows everything.
func (r *Robots) Allowed(userAgent, url string) bool {
	if r == nil {
		return true
	}
	groups := r.groupsFor(userAgent)
	if len(groups) == 0 {
		return true
	}
	return allowedBy(groups, PathParamsQuery(url))
}

// CrawlDelay returns the Crawl-delay of the group that applies to userAgent
// (the same group Allowed uses), and whether it has one. Crawl-delay is not
// part of RFC 9309 nor of Google's parser, but many crawlers honour it. The
// value is in seconds, fractions allowed; a malformed one is ignored. When
// several groups apply, the largest delay wins.
func (r *Robots) CrawlDelay(userAgent string) (time.Duration, bool) {
	if r == nil {
		return 0, false
	}
	var d time.Duration
	found := false
	for _, g := range r.groupsFor(userAgent) {
		if g.hasDelay && (!found || g.delay > d) {
			d, found = g.delay, true
		}
	}
	return d, found
}

// Sitemaps returns the Sitemap: values in file order, wherever they appear,
// without empty values and exact duplicates. The slice is a copy.
func (r *Robots) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.sitemaps)
}

// groupsFor returns the groups that apply to userAgent: every group naming
// it, or else every "*" group.
func (r *Robots) groupsFor(userAgent string) []*group {
	if len(r.agents) > 0 {
		if gs, ok := r.lookupAgent(userAgent); ok {
			return gs
		}
	}
	return r.global
}

// lookupAgent finds the groups of a product token without allocating for
// tokens of usual length.
func (r *Robots) lookupAgent(userAgent string) ([]*group, bool) {
	var buf [64]byte
	b := buf[:0]
	for i := 0; i < len(userAgent); i++ {
		c := userAgent[i]
		if !isTokenChar(c) {
			// Tokens in the file only hold [A-Za-z_-], so nothing can match.
			return nil, false
		}
		b = append(b, lowerASCII(c))
	}
	gs, ok := r.agents[string(b)]
	return gs, ok
}
