package robots

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The conformance vectors transcribed from Google's robots_test.cc live in
// the shared folder beside the checkout; see ../shared/conformance/README.md.
// Every vector of every section must pass: there is no known-failure list.

type vectorFile struct {
	Counts            map[string]int `json:"counts"`
	Cases             []matchCase    `json:"cases"`
	DerivedCases      []matchCase    `json:"derived_cases"`
	ParseStats        []statsCase    `json:"parse_stats"`
	Sitemaps          []sitemapCase  `json:"sitemaps"`
	UserAgentValidity []agentCase    `json:"user_agent_validity"`
	PathParamsQuery   []pathCase     `json:"path_params_query"`
	EscapePattern     []escapeCase   `json:"escape_pattern"`
}

type statsCase struct {
	Name string `json:"name"`
	body64
	Expect map[string]int `json:"expect"` // valid_directives, unknown_directives, last_line_seen
}

type sitemapCase struct {
	Name     string   `json:"name"`
	Body     string   `json:"robots_txt"`
	Sitemaps []string `json:"sitemaps"`
}

type agentCase struct {
	Name      string `json:"name"`
	UserAgent string `json:"user_agent"`
	Valid     bool   `json:"valid"`
}

type pathCase struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Path string `json:"path"`
}

type escapeCase struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Escaped string `json:"escaped"`
}

// body64 is a robots.txt body given as text or, when not UTF-8, as base64.
type body64 struct {
	Text   string `json:"robots_txt"`
	Base64 string `json:"robots_txt_base64"`
}

func (b body64) bytes(t *testing.T) []byte {
	if b.Base64 == "" {
		return []byte(b.Text)
	}
	raw, err := base64.StdEncoding.DecodeString(b.Base64)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

type matchCase struct {
	Name     string `json:"name"`
	Category string `json:"category"`
	body64
	UserAgent string `json:"user_agent"`
	URL       string `json:"url"`
	Allowed   bool   `json:"allowed"`
}

// conformanceFile finds <project root>/../shared/conformance/robots/...,
// the project root being the folder holding go.mod.
func conformanceFile(t testing.TB) string {
	const name = "robots/google_robotstxt_cases.json"
	if d := os.Getenv("CONFORMANCE_DIR"); d != "" {
		return filepath.Join(d, name)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "conformance", name)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

func loadVectors(t *testing.T) vectorFile {
	path := conformanceFile(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("TRAWLER_CI") != "" {
			t.Fatalf("conformance data missing (is ../shared next to the checkout?): %v", err)
		}
		t.Skipf("conformance data missing, skipping: %v", err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGoogleConformance(t *testing.T) {
	f := loadVectors(t)
	sections := []struct {
		name  string
		names []string // one per vector, in file order
		check func(t *testing.T, i int) bool
	}{
		{"cases", namesOf(f.Cases, func(c matchCase) string { return c.Name }), func(t *testing.T, i int) bool {
			return checkMatch(t, f.Cases[i])
		}},
		{"derived_cases", namesOf(f.DerivedCases, func(c matchCase) string { return c.Name }), func(t *testing.T, i int) bool {
			return checkMatch(t, f.DerivedCases[i])
		}},
		{"parse_stats", namesOf(f.ParseStats, func(c statsCase) string { return c.Name }), func(t *testing.T, i int) bool {
			c := f.ParseStats[i]
			st := Parse(c.bytes(t)).stats
			got := map[string]int{"valid_directives": st.valid, "unknown_directives": st.unknown, "last_line_seen": st.lastLine}
			ok := true
			for k, want := range c.Expect {
				if g, known := got[k]; !known || g != want {
					t.Errorf("%s = %d, want %d", k, g, want)
					ok = false
				}
			}
			return ok
		}},
		{"sitemaps", namesOf(f.Sitemaps, func(c sitemapCase) string { return c.Name }), func(t *testing.T, i int) bool {
			c := f.Sitemaps[i]
			got := Parse([]byte(c.Body)).Sitemaps()
			if !slices.Equal(got, c.Sitemaps) {
				t.Errorf("Sitemaps() = %q, want %q", got, c.Sitemaps)
				return false
			}
			return true
		}},
		{"user_agent_validity", namesOf(f.UserAgentValidity, func(c agentCase) string { return c.Name }), func(t *testing.T, i int) bool {
			c := f.UserAgentValidity[i]
			if got := ValidUserAgent(c.UserAgent); got != c.Valid {
				t.Errorf("ValidUserAgent(%q) = %v, want %v", c.UserAgent, got, c.Valid)
				return false
			}
			return true
		}},
		{"path_params_query", namesOf(f.PathParamsQuery, func(c pathCase) string { return c.Name }), func(t *testing.T, i int) bool {
			c := f.PathParamsQuery[i]
			if got := PathParamsQuery(c.URL); got != c.Path {
				t.Errorf("PathParamsQuery(%q) = %q, want %q", c.URL, got, c.Path)
				return false
			}
			return true
		}},
		{"escape_pattern", namesOf(f.EscapePattern, func(c escapeCase) string { return c.Name }), func(t *testing.T, i int) bool {
			c := f.EscapePattern[i]
			if got := EscapePattern(c.Pattern); got != c.Escaped {
				t.Errorf("EscapePattern(%q) = %q, want %q", c.Pattern, got, c.Escaped)
				return false
			}
			return true
		}},
	}
	for _, s := range sections {
		t.Run(s.name, func(t *testing.T) {
			if want := f.Counts[s.name]; len(s.names) != want || want == 0 {
				t.Fatalf("%d vectors, the file's counts say %d", len(s.names), want)
			}
			passed := 0
			for i, name := range s.names {
				t.Run(name, func(t *testing.T) {
					if s.check(t, i) {
						passed++
					}
				})
			}
			t.Logf("%s: %d/%d passed", s.name, passed, len(s.names))
		})
	}
}

func namesOf[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

func checkMatch(t *testing.T, c matchCase) bool {
	got := Parse(c.bytes(t)).Allowed(c.UserAgent, c.URL)
	if got != c.Allowed {
		t.Errorf("[%s] Allowed(%q, %q) = %v, want %v", c.Category, c.UserAgent, c.URL, got, c.Allowed)
		return false
	}
	// The precompiled matcher and the reference-style one must agree too.
	if ref := referenceAllowed(c.bytes(t), c.UserAgent, c.URL); ref != c.Allowed {
		t.Errorf("[%s] referenceAllowed = %v, want %v", c.Category, ref, c.Allowed)
		return false
	}
	return true
}

// referenceAllowed answers like robots.cc's OneAgentAllowedByRobots: it
// streams the lines through the same state machine (seen_global_agent_,
// seen_specific_agent_, ever_seen_specific_agent_, seen_separator_) and
// matches with the same position-set algorithm, re-parsing on each call. It
// shares only line splitting and escaping with Parse, which the parse-level
// vectors check, so it is an independent oracle for grouping and matching.
func referenceAllowed(body []byte, agent, url string) bool {
	path := PathParamsQuery(url)
	var seenGlobal, seenSpecific, everSpecific, separator bool
	allowG, allowS, disG, disS := -1, -1, -1, -1
	record := func(prio int, allow bool) {
		switch {
		case seenSpecific && allow:
			allowS = max(allowS, prio)
		case seenSpecific:
			disS = max(disS, prio)
		case allow:
			allowG = max(allowG, prio)
		default:
			disG = max(disG, prio)
		}
	}
	var handleAllow func(value string)
	handleAllow = func(value string) {
		if referenceMatch(path, value) {
			record(len(value), true)
			return
		}
		if slash := strings.LastIndexByte(value, '/'); slash >= 0 && strings.HasPrefix(value[slash:], "/index.htm") {
			handleAllow(value[:slash+1] + "$")
		}
	}
	forEachLine(capSize(body), func(_ int, line []byte) {
		k, v, ok := splitLine(line)
		if !ok {
			return
		}
		value := string(v)
		switch k {
		case keyUserAgent:
			if separator {
				seenGlobal, seenSpecific, separator = false, false, false
			}
			if value != "" && value[0] == '*' && (len(value) == 1 || isSpace(value[1])) {
				seenGlobal = true
			} else if strings.EqualFold(ProductToken(value), agent) && (agent == "" || ValidUserAgent(agent)) {
				seenSpecific, everSpecific = true, true
			}
		case keyAllow, keyDisallow:
			if !seenGlobal && !seenSpecific {
				return
			}
			separator = true
			value = string(appendEscaped(nil, v))
			if k == keyAllow {
				handleAllow(value)
			} else if referenceMatch(path, value) {
				record(len(value), false)
			}
		}
	})
	if allowS > 0 || disS > 0 {
		return disS <= allowS
	}
	if everSpecific {
		return true
	}
	if allowG > 0 || disG > 0 {
		return disG <= allowG
	}
	return true
}

// referenceMatch is robots.cc's RobotsMatchStrategy::Matches.
func referenceMatch(path, pattern string) bool {
	pos := make([]int, len(path)+1)
	numpos := 1
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '$' && i+1 == len(pattern) {
			return pos[numpos-1] == len(path)
		}
		if c == '*' {
			numpos = len(path) - pos[0] + 1
			for j := 1; j < numpos; j++ {
				pos[j] = pos[j-1] + 1
			}
			continue
		}
		n := 0
		for j := range numpos {
			if pos[j] < len(path) && path[pos[j]] == c {
				pos[n] = pos[j] + 1
				n++
			}
		}
		numpos = n
		if numpos == 0 {
			return false
		}
	}
	return true
}

func TestMatchAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab/*$"
	gen := func(n int) string {
		b := make([]byte, rng.IntN(n))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 50000 {
		path, pat := "/"+strings.NewReplacer("*", "", "$", "").Replace(gen(10)), gen(8)
		r := compileRule(pat, false)
		if got, want := r.matches(path), referenceMatch(path, pat); got != want {
			t.Fatalf("pattern %q, path %q: matches = %v, reference %v", pat, path, got, want)
		}
	}
}

func TestAgainstReferenceRandomFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	agents := []string{"*", "FooBot", "foobot", "BarBot", "* x", "Foo Bar", "*x", "1x", ""}
	keys := []string{"user-agent", "useragent", "allow", "Disallow", "sitemap", "crawl-delay", "foo", "ALLOW", "disalow"}
	pats := []string{"", "/", "/a", "/a/", "/a*b", "/*.php$", "/a$", "*", "$", "/index.html", "/a/index.htm", "/%aa", "/ü", "/a*", "/*/b", "/a$b",
		"/b", "/b/", "/ba", "/b*a$", "/x.php", "/?q", "a", "*a", "/a/b", "/ab$", "/a/*/b", "/%C3%BC"}
	paths := []string{"/", "/a", "/a/", "/a/b", "/ab", "/x.php", "/x.php?q", "/a$b", "/%AA", "/%C3%BC", "/a/index.htm", "/b"}
	filed := 0 // groups whose rules were filed by byte (some counted twice)
	for i := range 3000 {
		// Every other file has long groups, so rules get filed by byte.
		lines, uaOdds := 12, 4
		if i%2 == 1 {
			lines, uaOdds = 120, 30
		}
		var sb strings.Builder
		for range rng.IntN(lines) {
			k := keys[2+rng.IntN(len(keys)-2)]
			v := pats[rng.IntN(len(pats))]
			if rng.IntN(uaOdds) == 0 {
				k, v = keys[rng.IntN(2)], agents[rng.IntN(len(agents))]
			}
			sep := []string{": ", ":", " ", "\t:", " : "}[rng.IntN(5)]
			eol := []string{"\n", "\r\n", "\r", "\n\n", " # c\n"}[rng.IntN(5)]
			sb.WriteString(k + sep + v + eol)
		}
		body := []byte(sb.String())
		r := Parse(body)
		for _, gs := range r.agents {
			for _, g := range slices.Concat(gs, r.global) {
				if g.keys != "" {
					filed++
				}
			}
		}
		for _, agent := range []string{"FooBot", "barbot", "Foo Bar", "", "Other"} {
			for _, p := range paths {
				if got, want := r.Allowed(agent, p), referenceAllowed(body, agent, p); got != want {
					t.Fatalf("Allowed(%q, %q) = %v, reference %v, file:\n%s", agent, p, got, want, body)
				}
			}
		}
	}
	if filed < 300 {
		t.Errorf("only %d groups used the byte directory", filed)
	}
}

func TestForStatus(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /private\n")
	for _, tc := range []struct {
		status     int
		private    bool // /private allowed
		public     bool // /public allowed
		retryLater bool
	}{
		{200, false, true, false},
		{204, false, true, false},
		{301, true, true, false},
		{400, true, true, false},
		{401, true, true, false},
		{403, true, true, false},
		{404, true, true, false},
		{410, true, true, false},
		{429, false, false, true}, // like a 5xx, as Google does
		{500, false, false, true},
		{503, false, false, true},
		{0, false, false, true},
		{100, false, false, true},
		{600, false, false, true},
	} {
		r, retry := ForStatus(tc.status, body)
		if got := r.Allowed("Trawler", "/private"); got != tc.private {
			t.Errorf("%d: /private allowed = %v", tc.status, got)
		}
		if got := r.Allowed("Trawler", "http://h/public"); got != tc.public {
			t.Errorf("%d: /public allowed = %v", tc.status, got)
		}
		if retry != tc.retryLater {
			t.Errorf("%d: retryLater = %v", tc.status, retry)
		}
	}
}

func TestAllowAllDisallowAll(t *testing.T) {
	for _, u := range []string{"", "/", "http://h", "http://h/x?y", "a", "?q"} {
		for _, ua := range []string{"", "Trawler", "*"} {
			if !AllowAll().Allowed(ua, u) {
				t.Errorf("AllowAll disallows %q for %q", u, ua)
			}
			if DisallowAll().Allowed(ua, u) {
				t.Errorf("DisallowAll allows %q for %q", u, ua)
			}
		}
	}
	var zero Robots
	var nilRobots *Robots
	if !zero.Allowed("x", "/") || !nilRobots.Allowed("x", "/") {
		t.Error("zero or nil Robots disallows")
	}
	if _, ok := nilRobots.CrawlDelay("x"); ok || nilRobots.Sitemaps() != nil {
		t.Error("nil Robots has a crawl-delay or sitemaps")
	}
}

func TestCrawlDelay(t *testing.T) {
	body := []byte(`Crawl-delay: 99
User-agent: FooBot
Crawl-delay: 2.5
Disallow: /x
User-agent: *
crawl-DELAY: 7 # seconds
User-agent: BarBot
Crawl-delay: -1
Crawl-delay: 1e3
Crawl-delay: 5s
Crawl-delay: 0x10
Disallow: /b
User-agent: BazBot
Allow: /
User-agent: QuxBot
Crawl-delay: 1
Disallow: /q
User-agent: QuxBot
Crawl-delay: 3
Disallow: /q
User-agent: Huge
Crawl-delay: 99999999999999999999
Disallow: /h
User-agent: Half
Crawl-delay: .5
`)
	r := Parse(body)
	for _, tc := range []struct {
		agent string
		want  time.Duration
		ok    bool
	}{
		{"FooBot", 2500 * time.Millisecond, true},
		{"foobot", 2500 * time.Millisecond, true},
		{"Other", 7 * time.Second, true},  // the "*" group
		{"BarBot", 7 * time.Second, true}, // shares the "*" group (no rule in between); its own values are invalid
		{"BazBot", 0, false},              // named: the "*" group does not apply
		{"QuxBot", 3 * time.Second, true}, // two groups: the largest
		{"Huge", 0, false},                // past time.Duration
		{"Half", 500 * time.Millisecond, true},
	} {
		d, ok := r.CrawlDelay(tc.agent)
		if d != tc.want || ok != tc.ok {
			t.Errorf("CrawlDelay(%q) = %v, %v; want %v, %v", tc.agent, d, ok, tc.want, tc.ok)
		}
	}
	// Crawl-delay is unknown to Google: it must not split groups.
	if Parse([]byte("User-agent: a\nCrawl-delay: 1\nUser-agent: b\nDisallow: /\n")).Allowed("a", "/x") {
		t.Error("Crawl-delay closed the group")
	}
}

func TestSitemapsDedup(t *testing.T) {
	r := Parse([]byte("Sitemap: http://a/1.xml\nsitemap:\nUser-agent: *\nSite-map: http://a/2.xml\nSitemap: http://a/1.xml # again\n"))
	if got, want := r.Sitemaps(), []string{"http://a/1.xml", "http://a/2.xml"}; !slices.Equal(got, want) {
		t.Errorf("Sitemaps() = %q, want %q", got, want)
	}
	r.Sitemaps()[0] = "changed"
	if r.Sitemaps()[0] != "http://a/1.xml" {
		t.Error("Sitemaps() exposes internal state")
	}
}

func TestMaxSize(t *testing.T) {
	head := "User-agent: *\nDisallow: /\n"
	filler := strings.Repeat("# "+strings.Repeat("x", 97)+"\n", MaxSize/100-10)
	// "Allow: /private/ok" straddles the limit: cut, it would read
	// "Allow: /pri" and widen what is allowed, so the whole line is dropped.
	prefix := head + filler
	prefix += strings.Repeat("#", MaxSize-len("Allow: /pri")-len(prefix)-1) + "\n"
	body := []byte(prefix + "Allow: /private/ok\n")
	if string(body[MaxSize-len("Allow: /pri"):MaxSize]) != "Allow: /pri" {
		t.Fatal("test body does not straddle MaxSize as intended")
	}
	for name, b := range map[string][]byte{"whole body": body, "body cut at MaxSize by the caller": body[:MaxSize]} {
		r := Parse(b)
		if r.Allowed("x", "/private/ok") || r.Allowed("x", "/prix") {
			t.Errorf("%s: the line across MaxSize was used", name)
		}
	}
	// A limit that falls on a line end loses nothing before it.
	exact := head + "Allow: /private/ok\n"
	exact += strings.Repeat("#", MaxSize-len(exact))
	r := Parse([]byte(exact + "\nAllow: /private\n"))
	if !r.Allowed("x", "/private/ok") || r.Allowed("x", "/private/no") {
		t.Error("content within MaxSize lost, or content beyond it used")
	}
}

func TestProductToken(t *testing.T) {
	for in, want := range map[string]string{
		"Trawler/0.1 (+https://github.com/trawlerhq/trawler)": "Trawler",
		"Googlebot-News":  "Googlebot-News",
		"Foo Bar":         "Foo",
		"":                "",
		"*":               "",
		"Mozilla/5.0 (x)": "Mozilla",
	} {
		if got := ProductToken(in); got != want {
			t.Errorf("ProductToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseQuirks(t *testing.T) {
	for _, tc := range []struct {
		name, body, agent, url string
		want                   bool
	}{
		{"prefix keys", "user-agent-x: FooBot\ndisallowed: /a\n", "FooBot", "/a", false},
		{"typo keys", "useragent: FooBot\ndissallow: /a\n", "FooBot", "/a", false},
		{"colon in no-colon line", "User-agent: FooBot\nDisallow /a:b\n", "FooBot", "/b", true},
		{"three words without colon", "User-agent: FooBot\nDisallow /a b\n", "FooBot", "/a", true},
		{"NUL ends the line", "User-agent: FooBot\nDisallow: /a\x00b\n", "FooBot", "/ax", false},
		{"star with suffix is global", "User-agent: * everyone\nDisallow: /\n", "FooBot", "/", false},
		{"star glued is not global", "User-agent: *bots\nDisallow: /\n", "FooBot", "/", true},
		{"agent version is cut", "User-agent: FooBot/2.1\nDisallow: /\n", "foobot", "/", false},
		{"full UA header never matches", "User-agent: FooBot\nDisallow: /\nUser-agent: *\nAllow: /\n", "FooBot/2.1", "/", true},
		{"dollar inside is literal", "User-agent: *\nDisallow: /a$b\n", "x", "/a$b/c", false},
		{"lower-case escape in rule", "User-agent: *\nDisallow: /%aa\n", "x", "/%AA", false},
		{"empty disallow closes group", "User-agent: a\nDisallow:\nUser-agent: b\nDisallow: /\n", "a", "/x", true},
		{"agents merge across groups", "User-agent: a\nDisallow: /x\nUser-agent: b\nAllow: /\nUser-agent: a\nAllow: /x/y\n", "a", "/x/y", true},
		{"vertical tab is whitespace", "User-agent: a\v\nDisallow:\v/x\n", "a", "/x", false},
	} {
		if got := Parse([]byte(tc.body)).Allowed(tc.agent, tc.url); got != tc.want {
			t.Errorf("%s: Allowed(%q, %q) = %v, want %v", tc.name, tc.agent, tc.url, got, tc.want)
		}
		if ref := referenceAllowed([]byte(tc.body), tc.agent, tc.url); ref != tc.want {
			t.Errorf("%s: reference says %v, want %v", tc.name, ref, tc.want)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	r := Parse(realisticRobots())
	want := r.Allowed("Trawler", "/search?q=x")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if r.Allowed("Trawler", "/search?q=x") != want {
					t.Error("answer changed under concurrency")
					return
				}
				r.CrawlDelay("bingbot")
				r.Sitemaps()
			}
		})
	}
	wg.Wait()
}

func TestAllowedDoesNotAllocate(t *testing.T) {
	r := Parse(realisticRobots())
	n := testing.AllocsPerRun(100, func() {
		r.Allowed("Googlebot", "https://www.example.com/products/item-123/reviews?page=2#top")
		r.Allowed("Trawler", "/cart/checkout")
		r.CrawlDelay("bingbot")
	})
	if n != 0 {
		t.Errorf("%v allocations per check", n)
	}
}

// TestFootprint reports the memory a parsed realistic file keeps alive.
func TestFootprint(t *testing.T) {
	body := realisticRobots()
	const n = 200
	keep := make([]*Robots, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = Parse(body)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	runtime.KeepAlive(keep)
	t.Logf("a parsed %d-byte robots.txt keeps about %d bytes alive", len(body), per)
	if per > 4*int64(len(body)) {
		t.Errorf("a parsed %d-byte file keeps %d bytes", len(body), per)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("User-agent: *\nDisallow: /a*b$\nAllow: /a/index.html\n"), "FooBot", "http://x/a/b")
	f.Add([]byte("\xEF\xBBuser-agent FooBot\r\ndisallow /\rsitemap: x\n"), "foobot", "/")
	f.Add([]byte("User-agent: foo bar\nCrawl-delay: 1.5\nDisallow: /%e3%83%84\n"), "", "//a/b?c#d")
	f.Add([]byte("User-Agent: *x\nAllow: ツ*$\nuser-agent: a\n\x00disallow:/"), "a", "example.com?a")
	f.Add([]byte("User-agent: a\nDisallow: /a\nDisallow: /b\nDisallow: /c\nDisallow: /d\nDisallow: /e\nDisallow: /f\n"+
		"Disallow: /g\nDisallow: /h\nDisallow: /i\nDisallow: /j\nDisallow: /k\nDisallow: /l\nAllow: /a/b\nAllow: /*.x$\n"+
		"Disallow: /*?q=\nAllow: /b*c\nDisallow: /bc$\n"), "a", "/bc")
	f.Fuzz(func(t *testing.T, body []byte, agent, url string) {
		r := Parse(body)
		got := r.Allowed(agent, url)
		r.CrawlDelay(agent)
		r.Sitemaps()
		PathParamsQuery(url)
		EscapePattern(url)
		if want := referenceAllowed(body, agent, url); got != want {
			t.Fatalf("Allowed(%q, %q) = %v, reference %v", agent, url, got, want)
		}
	})
}

// realisticRobots builds a robots.txt of about 13 KB shaped like a large
// site's: comments, a few named crawlers with their own groups, a long "*"
// group of prefix and wildcard rules, crawl-delays and sitemaps.
func realisticRobots() []byte {
	var b strings.Builder
	b.WriteString("# robots.txt for www.example.com\n# Questions: webmaster@example.com\n\n")
	sections := []string{"account", "admin", "api", "cart", "checkout", "search", "compare", "wishlist", "gift", "orders", "help", "ajax", "tmp", "print", "share", "review", "video", "media", "export", "beta"}
	params := []string{"sort", "filter", "sessionid", "ref", "utm_source", "page", "view", "lang", "color", "size"}
	for _, bot := range []string{"Googlebot", "Bingbot", "Slurp", "DuckDuckBot", "Baiduspider", "YandexBot"} {
		fmt.Fprintf(&b, "User-agent: %s\n", bot)
		if bot == "Bingbot" || bot == "YandexBot" {
			b.WriteString("Crawl-delay: 2\n")
		}
		for i, s := range sections[:12] {
			fmt.Fprintf(&b, "Disallow: /%s/\n", s)
			if i%3 == 0 {
				fmt.Fprintf(&b, "Allow: /%s/public/\n", s)
			}
		}
		for _, p := range params[:5] {
			fmt.Fprintf(&b, "Disallow: /*?%s=\n", p)
		}
		b.WriteString("Disallow: /*.json$\n\n")
	}
	for _, bot := range []string{"AhrefsBot", "SemrushBot", "MJ12bot", "DotBot", "GPTBot", "CCBot"} {
		fmt.Fprintf(&b, "User-agent: %s\n", bot)
	}
	b.WriteString("Disallow: /\n\n")
	b.WriteString("User-agent: *\nCrawl-delay: 1\n")
	for _, s := range sections {
		fmt.Fprintf(&b, "Disallow: /%s/\n", s)
		fmt.Fprintf(&b, "Disallow: /*/%s/\n", s)
		fmt.Fprintf(&b, "Allow: /%s/help/\n", s)
	}
	for _, p := range params {
		fmt.Fprintf(&b, "Disallow: /*?%s=\n", p)
		fmt.Fprintf(&b, "Disallow: /*&%s=\n", p)
	}
	for i := range 60 {
		fmt.Fprintf(&b, "Disallow: /catalog/category-%d/*/print$ # old print views\n", i)
	}
	for i := range 80 {
		fmt.Fprintf(&b, "Disallow: /legacy/%s-%d.html\n", sections[i%len(sections)], i)
	}
	b.WriteString("Disallow: /*.pdf$\nDisallow: /*.xls$\nAllow: /catalog/\nAllow: /index.html\n\n")
	for i := range 30 {
		fmt.Fprintf(&b, "Sitemap: https://www.example.com/sitemaps/sitemap-%03d.xml.gz\n", i)
	}
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	body := realisticRobots()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(body)
	}
}

func BenchmarkAllowed(b *testing.B) {
	r := Parse(realisticRobots())
	for _, bc := range []struct{ name, agent, url string }{
		// Trawler is not named: the 225-rule "*" group applies.
		{"star-group/allowed-full-scan", "Trawler", "/products/item-12345/details"},
		{"star-group/disallowed-wildcard", "Trawler", "/products/list?page=3"},
		{"star-group/absolute-url", "Trawler", "https://www.example.com/catalog/category-7/shoes/print?x=1#top"},
		{"named-group", "Googlebot", "https://www.example.com/search/public/x"},
		{"named-group-case", "googlebot", "/products/item-1"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Allowed(bc.agent, bc.url)
			}
		})
	}
}
