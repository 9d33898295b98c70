package robots

import (
	"cmp"
	"strings"
)

// rule is a compiled Allow or Disallow pattern.
type rule struct {
	pattern string   // escaped, without the anchoring '$'
	mask    pairMask // byte pairs the path must contain

	prio     int32 // length of the pattern as written: longer wins
	lit      int32 // bytes before the first '*', compared directly
	allow    bool
	anchored bool // the pattern ended with '$': it must match the whole path
}

// compileRule compiles an escaped pattern. Only a final '$' anchors; one
// anywhere else is a literal '$', as in robots.cc.
func compileRule(pattern string, allow bool) rule {
	if body, ok := strings.CutSuffix(pattern, "$"); ok {
		return newRule(body, allow, true)
	}
	return newRule(pattern, allow, false)
}

func newRule(body string, allow, anchored bool) rule {
	prio := len(body)
	if anchored {
		prio++
	}
	lit := strings.IndexByte(body, '*')
	if lit < 0 {
		lit = len(body)
	}
	var mask pairMask
	for i := 1; i < len(body); i++ {
		if body[i-1] != '*' && body[i] != '*' {
			mask.add(body[i-1], body[i])
		}
	}
	return rule{pattern: body, mask: mask, prio: int32(prio), lit: int32(lit), allow: allow, anchored: anchored}
}

// canMatch is false for rules no path can match: paths always start with
// '/', so a pattern starting with anything but '/' or '*' never matches, nor
// does a lone "$".
func (r *rule) canMatch() bool {
	return (r.lit == 0 || r.pattern[0] == '/') && !(r.anchored && r.pattern == "")
}

// bucket is the byte that files a rule under the directory of its group:
// the one after the leading '/', when it is literal; -1 otherwise.
func (r *rule) bucket() int {
	if r.lit >= 2 {
		return int(r.pattern[1])
	}
	return -1
}

// pairMask is a 128-bit Bloom filter of the adjacent byte pairs of a
// string. A rule whose literal pairs are not all in the path's filter
// cannot match it: that rejects most rules with two ANDs, before any
// string comparison.
type pairMask [2]uint64

func (m *pairMask) add(a, b byte) {
	h := (uint32(a)<<8 | uint32(b)) * 0x9E3779B1 >> 25 // 7 bits
	m[h>>6] |= 1 << (h & 63)
}

// within reports whether every pair of m is in path.
func (m *pairMask) within(path *pairMask) bool {
	return m[0]&^path[0] == 0 && m[1]&^path[1] == 0
}

func maskOf(path string) pairMask {
	var m pairMask
	for i := 1; i < len(path); i++ {
		m.add(path[i-1], path[i])
	}
	return m
}

// compareRules orders rules so that the first one matching a path is the
// one that decides: longest first, and Allow before Disallow on equal
// length. The rest only makes the order total, so duplicates end up adjacent.
func compareRules(a, b *rule) int {
	if c := cmp.Compare(b.prio, a.prio); c != 0 {
		return c
	}
	if a.allow != b.allow {
		if a.allow {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.pattern, b.pattern); c != 0 {
		return c
	}
	if a.anchored != b.anchored {
		if a.anchored {
			return -1
		}
		return 1
	}
	return 0
}

// beats reports whether r takes precedence over best (nil: no match yet).
func (r *rule) beats(best *rule) bool {
	return best == nil || r.prio > best.prio || r.prio == best.prio && r.allow && !best.allow
}

// allowedBy applies the longest-match rule over the groups that apply to an
// agent: the deciding rule is the best match of all their rules.
func allowedBy(groups []*group, path string) bool {
	pm := maskOf(path)
	var best *rule
	for _, g := range groups {
		best = firstMatch(g.rules[:g.nscan], path, &pm, best)
		if len(path) > 1 && g.keys != "" {
			if i := strings.IndexByte(g.keys, path[1]); i >= 0 {
				best = firstMatch(g.rules[g.starts[i]:g.starts[i+1]], path, &pm, best)
			}
		}
	}
	return best == nil || best.allow
}

// firstMatch scans rules, sorted by compareRules, for the first that
// matches path, and returns it if it beats best (else best). The scan stops
// once the remaining rules could not beat best anyway.
func firstMatch(rules []rule, path string, pathMask *pairMask, best *rule) *rule {
	for i := range rules {
		r := &rules[i]
		if !r.beats(best) {
			break
		}
		if r.mask.within(pathMask) && r.matches(path) {
			return r
		}
	}
	return best
}

// matches reports whether the rule's pattern matches path from its start.
func (r *rule) matches(path string) bool {
	lit := int(r.lit)
	if len(path) < lit || path[:lit] != r.pattern[:lit] {
		return false
	}
	if lit == len(r.pattern) {
		return !r.anchored || len(path) == lit
	}
	return matchWild(path[lit:], r.pattern[lit:], r.anchored)
}

// matchWild matches pat, which starts with '*', against path. The literal
// runs between stars are placed leftmost one after the other, which finds a
// match whenever one exists; when anchored, the last run must end the path.
func matchWild(path, pat string, anchored bool) bool {
	for {
		pat = strings.TrimLeft(pat, "*")
		if pat == "" {
			return true // a final '*' takes the rest of the path
		}
		seg, rest := pat, ""
		if i := strings.IndexByte(pat, '*'); i >= 0 {
			seg, rest = pat[:i], pat[i:]
		}
		if rest == "" && anchored {
			return strings.HasSuffix(path, seg)
		}
		i := strings.Index(path, seg)
		if i < 0 {
			return false
		}
		if rest == "" {
			return true
		}
		path, pat = path[i+len(seg):], rest
	}
}

// PathParamsQuery returns the part of url that rules are matched against:
// path, params and query, without scheme, authority and fragment, and "/"
// when that is empty. It follows robots.cc's GetPathParamsQuery, so it also
// takes a bare path ("/a?b") and scheme-less forms ("example.com/a",
// "//host/a"). A path that itself starts with "//" is read as "//host/...".
func PathParamsQuery(url string) string {
	start := 0
	if strings.HasPrefix(url, "//") {
		start = 2
	}
	early := indexAnyFrom(url, start, "/?;")
	protoEnd := start
	if i := strings.Index(url[start:], "://"); i >= 0 && (early < 0 || early > start+i) {
		protoEnd = start + i + 3
	}
	ps := indexAnyFrom(url, protoEnd, "/?;")
	if ps < 0 {
		return "/"
	}
	end := len(url)
	if i := strings.IndexByte(url[start:], '#'); i >= 0 {
		if start+i < ps {
			return "/"
		}
		end = start + i
	}
	if url[ps] != '/' {
		return "/" + url[ps:end] // e.g. "example.com?a" -> "/?a"
	}
	return url[ps:end]
}

func indexAnyFrom(s string, from int, chars string) int {
	if i := strings.IndexAny(s[from:], chars); i >= 0 {
		return from + i
	}
	return -1
}

// ValidUserAgent reports whether s is a product token this package can
// match: one or more of [A-Za-z_-], as RFC 9309 section 2.2.1 allows.
func ValidUserAgent(s string) bool {
	return s != "" && ProductToken(s) == s
}

// ProductToken returns the leading product token of a User-Agent header,
// the part Allowed and CrawlDelay expect: "Trawler/0.1 (+https://x)" ->
// "Trawler". It is empty when the header does not start with one.
func ProductToken(userAgent string) string {
	for i := 0; i < len(userAgent); i++ {
		if !isTokenChar(userAgent[i]) {
			return userAgent[:i]
		}
	}
	return userAgent
}

func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_'
}
