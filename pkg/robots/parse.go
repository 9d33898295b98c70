package robots

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// maxLineLen is how many bytes of a line are kept; robots.cc drops the rest
// (its buffer is 2083*8 bytes, one of which holds the terminating NUL).
const maxLineLen = 2083*8 - 1

// key is the kind of a robots.txt line.
type key int

const (
	keyUnknown key = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay // unknown to Google, so counted as unknown in stats
)

// Parse parses a robots.txt body. It never fails: what it cannot make sense
// of is ignored, as RFC 9309 asks. Only the first MaxSize bytes are read.
func Parse(data []byte) *Robots {
	var b builder
	forEachLine(capSize(data), b.line)
	return b.finish()
}

// capSize drops what lies beyond MaxSize, and the line cut by the limit.
func capSize(data []byte) []byte {
	if len(data) < MaxSize {
		return data
	}
	if len(data) > MaxSize && isEOL(data[MaxSize]) {
		return data[:MaxSize] // the limit falls on a line end: nothing is cut
	}
	data = data[:MaxSize]
	return data[:bytes.LastIndexAny(data, "\r\n")+1]
}

func isEOL(c byte) bool { return c == '\n' || c == '\r' }

// forEachLine calls emit with each line and its 1-based number, splitting
// as robots.cc does: a leading (possibly partial) UTF-8 BOM is skipped; CR,
// LF and CRLF end lines; lines are cut at maxLineLen bytes; the last line is
// emitted even when empty.
func forEachLine(data []byte, emit func(num int, line []byte)) {
	bom := "\xEF\xBB\xBF"
	n := 0
	for n < len(bom) && n < len(data) && data[n] == bom[n] {
		n++
	}
	data = data[n:]

	num, start := 0, 0
	lastWasCR := false
	for i, c := range data {
		if !isEOL(c) {
			continue
		}
		// The LF of a CRLF ends no line of its own.
		if !(i == start && lastWasCR && c == '\n') {
			num++
			emit(num, cutLine(data[start:i]))
		}
		start = i + 1
		lastWasCR = c == '\r'
	}
	emit(num+1, cutLine(data[start:]))
}

func cutLine(line []byte) []byte {
	if len(line) > maxLineLen {
		return line[:maxLineLen]
	}
	return line
}

// builder accumulates groups while the lines go by.
type builder struct {
	arena    []byte          // every escaped rule pattern, back to back
	groups   []*groupBuilder // in file order
	cur      *groupBuilder   // nil before the first user-agent line
	agents   map[string][]int
	global   []int
	sitemaps []string
	seenMaps map[string]bool
	lower    []byte // scratch for lower-casing tokens
	stats    stats
}

type groupBuilder struct {
	rules    []span
	closed   bool // an Allow/Disallow line was seen: a user-agent line opens a new group
	delay    time.Duration
	hasDelay bool
}

// span is a rule whose pattern is arena[off:off+n].
type span struct {
	off, n   int32
	allow    bool
	dirIndex bool // the pattern is followed by an implicit '$'
}

func (b *builder) line(num int, line []byte) {
	k, value, ok := splitLine(line)
	if !ok {
		return
	}
	b.stats.lastLine = num
	if k == keyUnknown || k == keyCrawlDelay {
		b.stats.unknown++
	} else {
		b.stats.valid++
	}
	switch k {
	case keyUserAgent:
		b.userAgent(value)
	case keyAllow, keyDisallow:
		b.rule(k == keyAllow, value)
	case keySitemap:
		b.sitemap(value)
	case keyCrawlDelay:
		b.crawlDelay(value)
	}
}

// userAgent handles a user-agent line. Consecutive user-agent lines share a
// group; one that follows a rule starts a new group.
func (b *builder) userAgent(value []byte) {
	if b.cur == nil || b.cur.closed {
		b.cur = &groupBuilder{}
		b.groups = append(b.groups, b.cur)
	}
	gi := len(b.groups) - 1
	// Google: "*" alone, or followed by whitespace, is the global agent.
	if len(value) > 0 && value[0] == '*' && (len(value) == 1 || isSpace(value[1])) {
		if n := len(b.global); n == 0 || b.global[n-1] != gi {
			b.global = append(b.global, gi)
		}
		return
	}
	// Otherwise the value is read up to its first character outside
	// [A-Za-z_-]: "Foo Bar" and "Foo/1.2" both mean "Foo".
	b.lower = b.lower[:0]
	for _, c := range value {
		if !isTokenChar(c) {
			break
		}
		b.lower = append(b.lower, lowerASCII(c))
	}
	if b.agents == nil {
		b.agents = map[string][]int{}
	}
	gs := b.agents[string(b.lower)]
	if n := len(gs); n == 0 || gs[n-1] != gi {
		b.agents[string(b.lower)] = append(gs, gi)
	}
}

// rule handles an Allow or Disallow line; outside any group it is ignored.
func (b *builder) rule(allow bool, value []byte) {
	if b.cur == nil {
		return
	}
	b.cur.closed = true
	if len(value) == 0 {
		return // an empty pattern has priority 0 and never decides anything
	}
	off := len(b.arena)
	b.arena = appendEscaped(b.arena, value)
	pat := b.arena[off:]
	b.cur.rules = append(b.cur.rules, span{off: int32(off), n: int32(len(pat)), allow: allow})

	// Google: allowing .../index.htm(l) also allows the directory itself,
	// as the pattern ".../$", whose body is a prefix of this one.
	if allow {
		if slash := bytes.LastIndexByte(pat, '/'); slash >= 0 && bytes.HasPrefix(pat[slash:], []byte("/index.htm")) {
			b.cur.rules = append(b.cur.rules, span{off: int32(off), n: int32(slash + 1), allow: true, dirIndex: true})
		}
	}
}

func (b *builder) sitemap(value []byte) {
	if len(value) == 0 {
		return
	}
	if b.seenMaps[string(value)] {
		return
	}
	if b.seenMaps == nil {
		b.seenMaps = map[string]bool{}
	}
	s := string(value)
	b.seenMaps[s] = true
	b.sitemaps = append(b.sitemaps, s)
}

// crawlDelay records a Crawl-delay in the current group; the largest wins.
func (b *builder) crawlDelay(value []byte) {
	d, ok := parseDelay(value)
	if !ok || b.cur == nil {
		return
	}
	if !b.cur.hasDelay || d > b.cur.delay {
		b.cur.delay, b.cur.hasDelay = d, true
	}
}

// parseDelay reads a non-negative decimal number of seconds such as "10" or
// "0.5". Signs, exponents, units and values past time.Duration are invalid.
func parseDelay(v []byte) (time.Duration, bool) {
	digits, dot := 0, 0
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && dot == 0:
			dot++
		default:
			return 0, false
		}
	}
	if digits == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f*float64(time.Second) >= float64(1<<63-1) {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// finish compiles the groups into an immutable Robots.
func (b *builder) finish() *Robots {
	r := &Robots{sitemaps: b.sitemaps, stats: b.stats}
	arena := string(b.arena)
	groups := make([]*group, len(b.groups))
	for i, gb := range b.groups {
		groups[i] = compileGroup(arena, gb)
	}
	pick := func(idx []int) []*group {
		gs := make([]*group, len(idx))
		for i, gi := range idx {
			gs[i] = groups[gi]
		}
		return gs
	}
	if len(b.agents) > 0 {
		r.agents = make(map[string][]*group, len(b.agents))
		for token, idx := range b.agents {
			r.agents[token] = pick(idx)
		}
	}
	if len(b.global) > 0 {
		r.global = pick(b.global)
	}
	return r
}

// splitLine extracts a line's key and value as robots.cc does: a NUL ends
// the line (C strings), '#' starts a comment, and the key is separated by
// the first ':', or, when the line has none, by whitespace if that leaves
// exactly two words ("disallow /x").
func splitLine(line []byte) (k key, value []byte, ok bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	if i := bytes.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = trimSpace(line)
	sep := bytes.IndexByte(line, ':')
	if sep < 0 {
		sep = bytes.IndexAny(line, " \t")
		if sep < 0 {
			return keyUnknown, nil, false
		}
		val := bytes.TrimLeft(line[sep:], " \t")
		if bytes.ContainsAny(val, " \t") {
			return keyUnknown, nil, false
		}
	}
	name := trimSpace(line[:sep])
	if len(name) == 0 {
		return keyUnknown, nil, false
	}
	return classify(name), trimSpace(line[sep+1:]), true
}

// classify names a key. Like robots.cc it matches prefixes, case-insensitively,
// and accepts a few frequent typos.
func classify(name []byte) key {
	switch {
	case hasPrefixFold(name, "user-agent", "useragent", "user agent"):
		return keyUserAgent
	case hasPrefixFold(name, "allow"):
		return keyAllow
	case hasPrefixFold(name, "disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"):
		return keyDisallow
	case hasPrefixFold(name, "sitemap", "site-map"):
		return keySitemap
	case strings.EqualFold(string(name), "crawl-delay"):
		return keyCrawlDelay
	}
	return keyUnknown
}

// hasPrefixFold reports whether s starts with one of the lower-case ASCII
// prefixes, ignoring ASCII case.
func hasPrefixFold(s []byte, prefixes ...string) bool {
	for _, p := range prefixes {
		if len(s) >= len(p) && equalFoldASCII(s[:len(p)], p) {
			return true
		}
	}
	return false
}

func equalFoldASCII(s []byte, lower string) bool {
	for i := range len(lower) {
		if lowerASCII(s[i]) != lower[i] {
			return false
		}
	}
	return true
}

// isSpace is C's isspace in the C locale, which robots.cc relies on.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func trimSpace(s []byte) []byte {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
