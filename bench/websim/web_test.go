package websim

import (
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestLinkShape(t *testing.T) {
	w, err := New(Config{Seed: 7, Hosts: 200, Pages: 500})
	if err != nil {
		t.Fatal(err)
	}
	var counts []int
	total, repeats, same := 0, 0, 0
	for h := 0; h < 200; h += 7 {
		for n := 1; n < 500; n += 3 {
			path := pagePath(n)
			links := w.Links(h, path)
			counts = append(counts, len(links))
			seen := map[string]bool{}
			for _, l := range links {
				total++
				if seen[l.URL] {
					repeats++
					continue
				}
				seen[l.URL] = true
				if strings.HasPrefix(l.URL, w.Origin(h)+"/") {
					same++
				}
			}
		}
	}
	sort.Ints(counts)
	median := counts[len(counts)/2]
	mean := float64(total) / float64(len(counts))
	t.Logf("links per page: median %d, mean %.1f; repeated %.1f %%; same host %.1f %% of distinct", median, mean,
		100*float64(repeats)/float64(total), 100*float64(same)/float64(total-repeats))
	if median < 18 || median > 28 || mean < 50 || mean > 75 {
		t.Errorf("links per page: median %d (want ~23), mean %.1f (want ~62)", median, mean)
	}
	if r := float64(repeats) / float64(total); r < 0.25 || r > 0.35 {
		t.Errorf("repeated share %.2f, want ~0.30", r)
	}
	if s := float64(same) / float64(total-repeats); s < 0.75 || s > 0.88 {
		t.Errorf("same-host share %.2f, want ~0.80", s)
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := New(Config{Seed: 3, Hosts: 5, Pages: 20})
	b, _ := New(Config{Seed: 3, Hosts: 5, Pages: 20})
	c, _ := New(Config{Seed: 4, Hosts: 5, Pages: 20})
	if !slices.Equal(a.Page(2, "/p/7"), b.Page(2, "/p/7")) {
		t.Fatal("same seed, different pages")
	}
	if slices.Equal(a.Page(2, "/p/7"), c.Page(2, "/p/7")) {
		t.Fatal("different seeds, same page")
	}
	if a.HostOf(a.Addr(4)) != 4 || a.HostOf("127.1.9.9:1") != -1 {
		t.Fatal("HostOf does not invert Addr")
	}
}

func TestTruthCoversEveryHostAndPage(t *testing.T) {
	w, _ := New(Config{Seed: 1, Hosts: 10, Pages: 30})
	tr := w.Truth()
	if tr.Pages != 10*30 {
		t.Errorf("truth has %d pages, want every page of every host (%d)", tr.Pages, 300)
	}
	if tr.Redirects == 0 || tr.NotFound == 0 || tr.Disallowed == 0 {
		t.Errorf("truth lacks redirects, 404s or disallowed links: %+v", tr)
	}
	for u := range tr.URLs {
		if strings.Contains(u, privatePrefix) {
			t.Fatalf("disallowed URL %s in the truth", u)
		}
	}
}

func TestTrapsStayOutOfTruth(t *testing.T) {
	w, _ := New(Config{Seed: 1, Hosts: 5, Pages: 40, Traps: true})
	tr := w.Truth()
	if tr.Traps == 0 {
		t.Fatal("trap mode links no traps")
	}
	h := 0
	if l := w.Links(h, "/cal/2026/12/"); len(l) != 2 || !strings.HasSuffix(l[1].URL, "/cal/2027/01/") {
		t.Fatalf("calendar does not go on: %+v", l)
	}
	if r := w.Resolve(h, "/chain/41"); r.Status != 302 || !strings.HasSuffix(r.Target, "/chain/42") {
		t.Fatalf("redirect chain ends: %+v", r)
	}
	for u := range tr.URLs {
		if strings.Contains(u, "/cal/") || strings.Contains(u, "/grow/") || strings.Contains(u, "/chain/") {
			t.Fatalf("trap %s in the truth", u)
		}
	}
}

func TestTopicalLinksStayOnTopic(t *testing.T) {
	w, _ := New(Config{Seed: 2, Hosts: 4, Pages: 200, Topics: 5})
	on, all := 0, 0
	for n := 1; n < 200; n++ {
		topic := w.Topic(1, pagePath(n))
		for _, l := range w.Links(1, pagePath(n)) {
			if h, p, _ := w.split(l.URL); h == 1 && w.Resolve(h, p).Kind == KindPage && p != "/" {
				all++
				if w.Topic(h, p) == topic {
					on++
				}
			}
		}
	}
	if share := float64(on) / float64(all); share < 0.5 { // by chance: 0.2; page budgets that exceed a topic spill over
		t.Fatalf("only %.2f of same-host links on topic", share)
	}
}

// TestServeAndJudge crawls a small web naively (sequentially, every URL
// once, robots obeyed) and checks the audit sees exactly that.
func TestServeAndJudge(t *testing.T) {
	w, _ := New(Config{Seed: 5, Hosts: 3, Pages: 15, Port: 18971})
	s, err := Serve(w)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	tr := w.Truth()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) *http.Response {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for u := range tr.URLs {
		resp := get(u)
		if want := w.Resolve(w.split2(t, u)).Status; resp.StatusCode != want {
			t.Fatalf("%s: status %d, want %d", u, resp.StatusCode, want)
		}
	}
	get(w.Origin(0) + "/robots.txt")
	get(w.Origin(1) + "/p/1") // a duplicate
	get(w.Origin(1) + "/private/3")
	time.Sleep(10 * time.Millisecond)
	a := w.Judge(tr, s.Log(), s.MaxConcurrent, time.Hour)
	if a.Fetched != len(tr.URLs) || a.Missing != 0 || a.Duplicates != 1 || a.Violations != 1 || a.Robots != 1 || a.MaxConcurrent != 1 {
		t.Fatalf("audit %+v, truth %d URLs", a, len(tr.URLs))
	}
	if a.Completeness() != 1 || a.GapsBelow == 0 || a.MinGapPages < 0 {
		t.Fatalf("audit %+v", a)
	}
}

func (w *Web) split2(t *testing.T, u string) (int, string) {
	h, p, ok := w.split(u)
	if !ok {
		t.Fatalf("%s is not of this web", u)
	}
	return h, p
}

// A gap short only when counted from the handler's return is the server's
// lateness; one short even from the moment the response began leaving is a
// breach.
func TestJudgeTellsBreachesFromServerLateness(t *testing.T) {
	w, err := New(Config{Seed: 1, Hosts: 1, Pages: 10})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	log := [][]Request{{
		{Path: "/", Start: at(0), Sent: at(5), End: at(40), Status: 200},         // handler descheduled after sending
		{Path: "/p/1", Start: at(120), Sent: at(125), End: at(130), Status: 200}, // 80 ms from End, 115 ms from Sent
		{Path: "/p/2", Start: at(200), Sent: at(205), End: at(210), Status: 200}, // 70 ms from End, 75 ms from Sent
	}}
	a := w.Judge(w.Truth(), log, nil, 100*time.Millisecond)
	if a.GapsBelow != 2 || a.Breaches != 1 {
		t.Fatalf("gaps below %d (want 2), breaches %d (want 1)", a.GapsBelow, a.Breaches)
	}
}
