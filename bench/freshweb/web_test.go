package freshweb

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable clock for the server.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time             { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)            { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Advance(d time.Duration)    { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock(t time.Time) *clock           { return &clock{t: t} }
func mustNew(t *testing.T, cfg Config) *Web { t.Helper(); w, err := New(cfg); must(t, err); return w }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Seed: 5, Hosts: 3, Pages: 20, Start: t0}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	cfg.Seed = 6
	c := mustNew(t, cfg)
	if !slices.Equal(a.Rates(), b.Rates()) {
		t.Fatal("same seed, different rates")
	}
	if slices.Equal(a.Rates(), c.Rates()) {
		t.Fatal("different seeds, same rates")
	}
	// Drawn lazily in different orders: a far ahead first, b version by
	// version, the change times are the same.
	end := t0.Add(2 * time.Hour)
	for id := range a.Len() {
		a.Version(id, end)
	}
	changed := 0
	for id := a.Len() - 1; id >= 0; id-- {
		var viaB []time.Time
		for v := 0; ; v++ {
			s, ok := b.Superseded(id, v)
			if !ok || !s.Before(end) {
				break
			}
			if !s.Before(b.Born()) {
				viaB = append(viaB, s)
			}
		}
		viaA := a.Changes(id, a.Born(), end)
		if !slices.EqualFunc(viaA, viaB, time.Time.Equal) {
			t.Fatalf("page %d: changes differ by the order they were drawn in:\n%v\n%v", id, viaA, viaB)
		}
		if len(viaA) > 0 {
			changed++
		}
		if !slices.Equal(a.Body(id/20, id%20, 3, t0), b.Body(id/20, id%20, 3, t0)) {
			t.Fatalf("page %d: bodies differ", id)
		}
	}
	if changed == 0 {
		t.Fatal("no page changed in two hours")
	}
	// The same seed at another start: the same changes, shifted.
	cfg.Seed, cfg.Start = 5, t0.Add(time.Hour)
	d := mustNew(t, cfg)
	for id := range a.Len() {
		x := a.Changes(id, t0, t0.Add(30*time.Minute))
		y := d.Changes(id, t0.Add(time.Hour), t0.Add(90*time.Minute))
		for k := range y {
			y[k] = y[k].Add(-time.Hour)
		}
		if !slices.EqualFunc(x, y, time.Time.Equal) {
			t.Fatalf("page %d: changes relative to Start differ between starts", id)
		}
	}
}

// TestPoissonRates checks that a page changes as a Poisson process at its
// rate: the count over a long span, and the exponential gaps (the share
// longer than the mean is 1/e).
func TestPoissonRates(t *testing.T) {
	w := mustNew(t, Config{Seed: 2, Hosts: 1, Pages: 100, ChangeMin: 20 * time.Second, ChangeMax: 20 * time.Second, Static: -1, Start: t0})
	span := 100000 * time.Second
	var total, long, gaps int
	for id := range w.Len() {
		if r := w.Rate(id); math.Abs(r-0.05) > 1e-12 {
			t.Fatalf("page %d: rate %g, want 0.05", id, r)
		}
		cs := w.Changes(id, w.Born(), w.Born().Add(span))
		total += len(cs)
		for k, c := range cs {
			if c.Nanosecond() != 0 {
				t.Fatalf("change at %v: not on a whole second", c)
			}
			if k > 0 {
				gaps++
				if c.Sub(cs[k-1]) > 20*time.Second {
					long++
				}
			}
		}
	}
	want := 100 * span.Seconds() / 20 // 500,000, sd ~707
	if math.Abs(float64(total)-want) > 0.01*want {
		t.Errorf("%d changes over %s on 100 pages, want %.0f ±1%%", total, span, want)
	}
	// Rounding gaps to whole seconds moves the share a little (about 1/40).
	if s := float64(long) / float64(gaps); math.Abs(s-1/math.E) > 0.03 {
		t.Errorf("share of gaps over the mean %.3f, want ~%.3f (exponential)", s, 1/math.E)
	}
}

// TestRateSpread checks the default web's rates: a fifth static, the rest
// log-uniform between one change per 5 s and one per 10 min.
func TestRateSpread(t *testing.T) {
	w := mustNew(t, Config{Seed: 1, Hosts: 40, Pages: 50, Start: t0})
	var logs []float64
	static := 0
	for _, r := range w.Rates() {
		if r == 0 {
			static++
			continue
		}
		if r < 1/600.0-1e-12 || r > 1/5.0+1e-12 {
			t.Fatalf("rate %g outside [1/600, 1/5]", r)
		}
		logs = append(logs, math.Log(r))
	}
	if s := float64(static) / float64(w.Len()); math.Abs(s-0.2) > 0.03 {
		t.Errorf("static share %.3f, want 0.2", s)
	}
	sort.Float64s(logs)
	lo, hi := math.Log(1/600.0), math.Log(1/5.0)
	for _, q := range []float64{0.1, 0.25, 0.5, 0.75, 0.9} {
		got := (logs[int(q*float64(len(logs)))] - lo) / (hi - lo)
		if math.Abs(got-q) > 0.05 {
			t.Errorf("log-rate quantile %.2f at %.3f of the range, want %.2f (log-uniform)", q, got, q)
		}
	}
}

func TestVersionHistory(t *testing.T) {
	w := mustNew(t, Config{Seed: 3, Hosts: 2, Pages: 10, ChangeMin: 2 * time.Second, ChangeMax: 30 * time.Second, Start: t0})
	for id := range w.Len() {
		cs := w.Changes(id, w.Born(), t0.Add(5*time.Minute))
		if w.Rate(id) == 0 {
			if len(cs) != 0 || w.Version(id, t0.Add(time.Hour)) != 0 || !w.LastModified(id, t0).Equal(w.Born()) {
				t.Fatalf("static page %d changed", id)
			}
			if _, ok := w.Superseded(id, 0); ok {
				t.Fatalf("static page %d: version 0 superseded", id)
			}
			continue
		}
		if w.Version(id, w.Born()) != 0 || w.Version(id, w.Born().Add(-time.Hour)) != 0 {
			t.Fatalf("page %d: not version 0 at birth", id)
		}
		for v, c := range cs {
			s, ok := w.Superseded(id, v)
			if !ok || !s.Equal(c) {
				t.Fatalf("page %d: version %d superseded at %v, its change is at %v", id, v, s, c)
			}
			if got := w.Version(id, c); got < v+1 {
				t.Fatalf("page %d: version %d at its change %d", id, got, v+1)
			}
			if got := w.Version(id, c.Add(-time.Nanosecond)); got > v {
				t.Fatalf("page %d: version %d just before change %d", id, got, v+1)
			}
			if m := w.LastModified(id, c.Add(500*time.Millisecond)); !m.Equal(cs[w.Version(id, c)-1]) {
				t.Fatalf("page %d: last modified %v after change at %v", id, m, c)
			}
		}
	}
}

// get asks host h's handler for path with the given headers.
func get(s *Server, h int, path string, hdr ...string) *http.Response {
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.Handler(h).ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	must(t, err)
	return string(b)
}

var versionRE = regexp.MustCompile(`version (\d+),`)

func versionOf(t *testing.T, b string) int {
	t.Helper()
	m := versionRE.FindStringSubmatch(b)
	if m == nil {
		t.Fatalf("no version in %.200q", b)
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// changingPage is a page of host 0 that changes, and its index.
func changingPage(t *testing.T, w *Web) (id, i int) {
	for i := range w.Config().Pages {
		if w.Rate(w.ID(0, i)) > 0 {
			return w.ID(0, i), i
		}
	}
	t.Fatal("no changing page on host 0")
	return 0, 0
}

func TestConditionalRequests(t *testing.T) {
	c := newClock(t0)
	w := mustNew(t, Config{Seed: 4, Hosts: 1, Pages: 20, Start: t0, Now: c.Now})
	s := NewServer(w)
	id, i := changingPage(t, w)
	path := Path(i)

	r := get(s, 0, path)
	b := body(t, r)
	etag, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
	v := w.Version(id, t0)
	if r.StatusCode != 200 || etag != ETag(id, v) || versionOf(t, b) != v {
		t.Fatalf("GET: %d, ETag %s, version %d; want 200, %s, %d", r.StatusCode, etag, versionOf(t, b), ETag(id, v), v)
	}
	if m, err := http.ParseTime(lm); err != nil || !m.Equal(w.LastModified(id, t0)) {
		t.Fatalf("Last-Modified %q, want %v", lm, w.LastModified(id, t0))
	}
	for _, tc := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"If-None-Match current", []string{"If-None-Match", etag}, 304},
		{"If-None-Match weak, in a list", []string{"If-None-Match", `"x", W/` + etag}, 304},
		{"If-None-Match *", []string{"If-None-Match", "*"}, 304},
		{"If-None-Match old", []string{"If-None-Match", ETag(id, v+7)}, 200},
		{"If-Modified-Since = Last-Modified", []string{"If-Modified-Since", lm}, 304},
		{"If-Modified-Since later", []string{"If-Modified-Since", t0.Add(time.Hour).Format(http.TimeFormat)}, 304},
		{"If-Modified-Since a second early", []string{"If-Modified-Since", w.LastModified(id, t0).Add(-time.Second).Format(http.TimeFormat)}, 200},
		{"If-Modified-Since unparsable", []string{"If-Modified-Since", "yesterday"}, 200},
		{"If-None-Match decides over If-Modified-Since", []string{"If-None-Match", ETag(id, v+7), "If-Modified-Since", lm}, 200},
	} {
		r := get(s, 0, path, tc.hdr...)
		b := body(t, r)
		if r.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, r.StatusCode, tc.want)
		}
		if r.StatusCode == 304 && (b != "" || r.Header.Get("ETag") != etag) {
			t.Errorf("%s: 304 with %d body bytes, ETag %q", tc.name, len(b), r.Header.Get("ETag"))
		}
	}

	// After the page's next change, the old validators get the new version.
	next, _ := w.Superseded(id, v)
	c.Set(next.Add(100 * time.Millisecond))
	v2 := w.Version(id, c.Now())
	for _, hdr := range [][]string{{"If-None-Match", etag}, {"If-Modified-Since", lm}} {
		r := get(s, 0, path, hdr...)
		if b := body(t, r); r.StatusCode != 200 || versionOf(t, b) != v2 || r.Header.Get("ETag") != ETag(id, v2) {
			t.Errorf("%s after a change: %d, version %d; want 200, version %d", hdr[0], r.StatusCode, versionOf(t, b), v2)
		}
	}

	log := s.Log()
	last := log[len(log)-1]
	if last.ID != id || last.Page != i || last.Version != v2 || last.Status != 200 || last.Cond != "date" || last.Body != last.Size || last.Size == 0 {
		t.Errorf("last log entry %+v", last)
	}
	if l := log[1]; l.Status != 304 || l.Version != v || l.Body != 0 || l.Cond != "etag" || l.Size != log[0].Size {
		t.Errorf("304 log entry %+v", l)
	}
}

func TestValidatorModes(t *testing.T) {
	for _, mode := range []string{ValidatorsNone, ValidatorsETag, ValidatorsLastModified} {
		w := mustNew(t, Config{Seed: 4, Hosts: 1, Pages: 20, Start: t0, Validators: mode, Now: func() time.Time { return t0 }})
		s := NewServer(w)
		id, i := changingPage(t, w)
		r := get(s, 0, Path(i))
		etag, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
		if (etag != "") != (mode == ValidatorsETag) || (lm != "") != (mode == ValidatorsLastModified) {
			t.Errorf("%s: ETag %q, Last-Modified %q", mode, etag, lm)
		}
		cur := ETag(id, w.Version(id, t0))
		date := w.LastModified(id, t0).Format(http.TimeFormat)
		for _, hdr := range [][]string{{"If-None-Match", cur}, {"If-Modified-Since", date}} {
			want := 200
			if (hdr[0] == "If-None-Match" && mode == ValidatorsETag) || (hdr[0] == "If-Modified-Since" && mode == ValidatorsLastModified) {
				want = 304
			}
			if r := get(s, 0, Path(i), hdr...); r.StatusCode != want {
				t.Errorf("%s: %s answered %d, want %d", mode, hdr[0], r.StatusCode, want)
			}
		}
	}
	if _, err := New(Config{Validators: "some"}); err == nil {
		t.Error("an unknown validators mode was accepted")
	}
}

// TestServeOverTheWire serves a web on loopback and checks what only a
// connection shows: the wire bytes of 200s and 304s, one address per
// host, and that the home pages' links reach every page.
func TestServeOverTheWire(t *testing.T) {
	w := mustNew(t, Config{Seed: 8, Hosts: 3, Pages: 15, Block: 93})
	s, err := Serve(w)
	must(t, err)
	defer s.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	fetch := func(url string, hdr ...string) (*http.Response, string) {
		req, err := http.NewRequest("GET", url, nil)
		must(t, err)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		r, err := client.Do(req)
		must(t, err)
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		must(t, err)
		return r, string(b)
	}
	hrefRE := regexp.MustCompile(`href="([^"]+)"`)
	seen := map[string]bool{}
	queue := s.Seeds()
	for _, u := range queue {
		seen[u] = true
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		r, b := fetch(u)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d", u, r.StatusCode)
		}
		origin := u[:strings.Index(u[len("http://"):], "/")+len("http://")]
		for _, m := range hrefRE.FindAllStringSubmatch(b, -1) {
			if l := origin + m[1]; !seen[l] {
				seen[l] = true
				queue = append(queue, l)
			}
		}
	}
	if len(seen) != w.Len() {
		t.Fatalf("links from the seeds reach %d pages, want %d", len(seen), w.Len())
	}
	r, _ := fetch(s.Origin(1) + "/p/3.html")
	r304, b := fetch(s.Origin(1)+"/p/3.html", "If-None-Match", r.Header.Get("ETag"))
	if r304.StatusCode != 304 || b != "" {
		t.Fatalf("conditional GET: %d with %d bytes", r304.StatusCode, len(b))
	}
	robots, _ := fetch(s.Origin(2) + "/robots.txt")
	missing, _ := fetch(s.Origin(2) + "/p/99.html")
	if robots.StatusCode != 200 || missing.StatusCode != 404 {
		t.Fatalf("robots.txt %d, a page beyond the host's %d", robots.StatusCode, missing.StatusCode)
	}
	// The handler logs a request after its response is flushed: the client
	// can have the last response before its entry is in the log.
	log := s.Log()
	for deadline := time.Now().Add(5 * time.Second); len(log) < w.Len()+4 && time.Now().Before(deadline); log = s.Log() {
		time.Sleep(5 * time.Millisecond)
	}
	if len(log) != w.Len()+4 {
		t.Fatalf("%d requests logged, want %d", len(log), w.Len()+4)
	}
	// Entries are appended as responses finish, which need not be the order the
	// requests began in; this client sent them one after another.
	slices.SortFunc(log, func(a, b Request) int { return a.Start.Compare(b.Start) })
	full, cond := log[len(log)-4], log[len(log)-3]
	if full.Host != 1 || full.Page != 3 || full.Wire <= full.Body || full.Body < 512 {
		t.Errorf("200 logged as %+v", full)
	}
	if cond.Status != 304 || cond.Wire == 0 || cond.Wire > full.Wire/10 || cond.Version != full.Version {
		t.Errorf("304 logged as %+v (the 200: %d bytes on the wire)", cond, full.Wire)
	}
	if l := log[len(log)-2]; l.Page != -1 || l.Status != 200 || l.Path != "/robots.txt" {
		t.Errorf("robots.txt logged as %+v", l)
	}
	if l := log[len(log)-1]; l.Page != -1 || l.ID != -1 || l.Status != 404 {
		t.Errorf("404 logged as %+v", l)
	}
	for h := range 3 {
		if !strings.HasPrefix(s.Addr(h), w.IP(h)+":") {
			t.Errorf("host %d at %s, want %s", h, s.Addr(h), w.IP(h))
		}
	}
}

func TestPageOf(t *testing.T) {
	w := mustNew(t, Config{Hosts: 1, Pages: 12, Start: t0})
	for i := range 12 {
		if got := w.PageOf(Path(i)); got != i {
			t.Errorf("PageOf(%q) = %d", Path(i), got)
		}
	}
	for _, p := range []string{"/p/0.html", "/p/12.html", "/p/01.html", "/p/3", "/index.html", "/p/-1.html"} {
		if got := w.PageOf(p); got != -1 {
			t.Errorf("PageOf(%q) = %d, want -1", p, got)
		}
	}
}
