package freshweb

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// hist is a hand-made history: changes[id] are the times versions 1, 2, ...
// began, as offsets from t0; nil for a page that never changes. Versions
// past the list are never superseded within the tests' spans.
type hist [][]time.Duration

func (h hist) Len() int { return len(h) }

func (h hist) Superseded(id, v int) (time.Time, bool) {
	if h[id] == nil {
		return time.Time{}, false
	}
	if v < len(h[id]) {
		return t0.Add(h[id][v]), true
	}
	return t0.Add(1000 * time.Hour), true
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// fetch is a logged page fetch at offset at.
func fetch(id int, at float64, status, version int) Request {
	return Request{ID: id, Method: "GET", Start: t0.Add(sec(at)), Status: status, Version: version, Size: 1000, Body: map[int]int64{200: 1000, 304: 0}[status], Wire: map[int]int64{200: 1200, 304: 150}[status]}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestMeasureHandMade works a schedule out by hand. Page 0 changes at 10,
// 20 and 30 s and is fetched at 0, 15 and 25: over [0, 40) it is fresh on
// [0,10), [15,20), [25,30) (20 s) and stale with ages growing from 0 to 5 s
// twice and from 0 to 10 s once (12.5 + 12.5 + 50 s²). Page 1 never changes
// and is fetched at 5: stale since the crawl's start (age t) before, fresh
// after.
func TestMeasureHandMade(t *testing.T) {
	h := hist{{sec(10), sec(20), sec(30)}, nil}
	log := []Request{fetch(0, 0, 200, 0), fetch(1, 5, 200, 0), fetch(0, 15, 200, 1), fetch(0, 25, 200, 2)}
	r := Measure(h, log, t0, t0, t0.Add(40*time.Second))
	if !near(r.Freshness, (20+35)/80.0, 1e-9) || !near(r.Age.Seconds(), (75+12.5)/80, 1e-6) {
		t.Errorf("freshness %.4f, age %v; want %.4f, %.4fs", r.Freshness, r.Age, 55/80.0, 87.5/80)
	}
	if r.Changing != 1 || !near(r.ChangingFreshness, 20/40.0, 1e-9) || !near(r.ChangingAge.Seconds(), 75/40.0, 1e-6) {
		t.Errorf("changing pages: %d, freshness %.4f, age %v", r.Changing, r.ChangingFreshness, r.ChangingAge)
	}
	if r.Requests != 4 || r.First != 2 || r.Changed != 2 || r.Unchanged() != 0 || r.PerSecond != 0.1 || r.NeverFetched != 0 || r.Late != 1 {
		t.Errorf("counts %+v", r)
	}

	// The same log over [12, 40): page 0 fetched before the window is held
	// at its start (stale since 10 s), page 1 is stale until 5... before
	// the window, so fresh throughout.
	r = Measure(h, log, t0, t0.Add(12*time.Second), t0.Add(40*time.Second))
	// Page 0: stale [12,15) ages 2..5 (10.5), fresh [15,20) and [25,30)
	// (10), stale [20,25) (12.5) and [30,40) (50).
	if !near(r.ChangingFreshness, 10/28.0, 1e-9) || !near(r.ChangingAge.Seconds(), 73/28.0, 1e-6) || !near(r.Freshness, 38/56.0, 1e-9) {
		t.Errorf("from 12 s: freshness %.4f (changing %.4f), age %v; want %.4f (%.4f), %.4fs", r.Freshness, r.ChangingFreshness, r.ChangingAge, 38/56.0, 10/28.0, 73/28.0)
	}
	if r.Requests != 2 || r.First != 0 || r.Changed != 2 || r.Late != 0 {
		t.Errorf("from 12 s: counts %+v", r)
	}

	// A page never fetched is stale all along, aged from the crawl's start.
	r = Measure(hist{nil}, nil, t0.Add(-10*time.Second), t0, t0.Add(10*time.Second))
	if r.Freshness != 0 || !near(r.Age.Seconds(), 15, 1e-6) || r.NeverFetched != 1 {
		t.Errorf("never fetched: freshness %.3f, age %v, never fetched %d; want 0, 15s, 1", r.Freshness, r.Age, r.NeverFetched)
	}
}

// TestMeasureUniformSchedule: a page changing every 10 s at 5, 15, 25, ...
// fetched every 10 s at 0, 10, 20, ... is fresh half the time, and its age
// climbs from 0 to 5 s every other 5 s: 1.25 s on average.
func TestMeasureUniformSchedule(t *testing.T) {
	var changes []time.Duration
	for k := range 100 {
		changes = append(changes, sec(5+10*float64(k)))
	}
	var log []Request
	for k := range 90 {
		log = append(log, fetch(0, 10*float64(k), 200, k))
	}
	r := Measure(hist{changes}, log, t0, t0.Add(100*time.Second), t0.Add(800*time.Second))
	if !near(r.Freshness, 0.5, 1e-9) || !near(r.Age.Seconds(), 1.25, 1e-6) {
		t.Errorf("freshness %.4f, age %v; want 0.5, 1.25s", r.Freshness, r.Age)
	}
	if r.Requests != 70 || r.Changed != 70 || !near(r.PerSecond, 0.1, 1e-12) {
		t.Errorf("%d requests (%d changed) at %.3f/s; want 70, all changed, 0.1/s", r.Requests, r.Changed, r.PerSecond)
	}
}

// TestMeasureBytes: the fetches that found the page as the previous fetch
// left it, 200 or 304, their bytes and what they would have cost.
func TestMeasureBytes(t *testing.T) {
	h := hist{{sec(100)}, nil}
	log := []Request{
		fetch(0, 1, 200, 0),  // warm-up: not counted, but held
		fetch(0, 20, 304, 0), // unchanged, 304
		fetch(0, 30, 200, 0), // unchanged, whole page (no validator sent)
		{ID: -1, Page: -1, Version: -1, Method: "GET", Start: t0.Add(sec(35)), Status: 200, Path: "/robots.txt"},
		fetch(1, 40, 200, 0),  // first
		fetch(0, 110, 200, 1), // changed
		fetch(0, 120, 304, 1), // unchanged, 304
		fetch(1, 130, 304, 0), // unchanged, 304
		{ID: 1, Method: "HEAD", Start: t0.Add(sec(131)), Status: 200, Version: 0},
		fetch(0, 300, 200, 1), // after the window
	}
	r := Measure(h, log, t0, t0.Add(10*time.Second), t0.Add(200*time.Second))
	if r.Requests != 6 || r.First != 1 || r.Changed != 1 || r.Unchanged200 != 1 || r.Unchanged304 != 3 || r.Other != 2 {
		t.Fatalf("counts: %+v", r)
	}
	if r.UnchangedBytes200 != 1200 || r.UnchangedBytes304 != 3*150 {
		t.Errorf("unchanged bytes 200 %d, 304 %d; want 1200, 450", r.UnchangedBytes200, r.UnchangedBytes304)
	}
	// A 200's headers are 200 bytes here (1200 on the wire, 1000 of body).
	if r.UnchangedFull != 4*1200 || !near(r.Saving(), 1-1650.0/4800, 1e-12) || !near(r.Share304(), 0.75, 1e-12) {
		t.Errorf("full %d, saving %.4f, 304 share %.3f", r.UnchangedFull, r.Saving(), r.Share304())
	}
	without := Result{Unchanged200: 4, UnchangedBytes200: 4 * 1200}
	if s := Saving304(r, without); !near(s, 1-(1650.0/4)/1200, 1e-12) {
		t.Errorf("saving against a run without validators %.4f", s)
	}
}

// TestMeasureMatchesSampling checks the exact integration against the
// issue's definition, sampled every 10 ms, on random histories and
// fetches.
func TestMeasureMatchesSampling(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const span = 200.0
	h := make(hist, 12)
	for id := range h {
		if id%4 == 3 {
			continue // static
		}
		for c := rng.Float64() * 30; c < 2*span; c += rng.ExpFloat64() * 20 {
			h[id] = append(h[id], sec(math.Ceil(c)))
		}
	}
	version := func(id int, at float64) int {
		v := 0
		for _, c := range h[id] {
			if c <= sec(at) {
				v++
			}
		}
		return v
	}
	var log []Request
	for id := range h {
		for at := rng.Float64() * 40; at < span; at += 1 + rng.ExpFloat64()*15 {
			log = append(log, fetch(id, at, 200, version(id, at)))
		}
	}
	start, from, to := 0.0, 30.0, 170.0
	r := Measure(h, log, t0.Add(sec(start)), t0.Add(sec(from)), t0.Add(sec(to)))

	var fresh, age, n float64
	for id := range h {
		for t := from + 0.005; t < to; t += 0.01 {
			held, at := -1, 0.0
			for _, f := range log {
				if s := f.Start.Sub(t0).Seconds(); f.ID == id && s <= t && s >= at {
					held, at = f.Version, s
				}
			}
			n++
			switch {
			case held < 0:
				age += t - start
			case held == version(id, t):
				fresh++
			default:
				s, _ := h.Superseded(id, held)
				age += t - s.Sub(t0).Seconds()
			}
		}
	}
	if !near(r.Freshness, fresh/n, 2e-3) || !near(r.Age.Seconds(), age/n, 0.02) {
		t.Errorf("exact: freshness %.4f, age %.3fs; sampled: %.4f, %.3fs", r.Freshness, r.Age.Seconds(), fresh/n, age/n)
	}
	if r.Freshness <= 0.05 || r.Freshness >= 0.95 {
		t.Errorf("freshness %.3f: the random case tests too little", r.Freshness)
	}
}

// TestUniformCrawlMatchesTheory crawls a web through its handler on a fake
// clock, every page once per interval with the last response's validators,
// and holds the measured freshness and age to what theory predicts for the
// web's rates, and the 304s to saving every body byte of unchanged pages.
func TestUniformCrawlMatchesTheory(t *testing.T) {
	c := newClock(t0)
	w := mustNew(t, Config{Seed: 11, Hosts: 2, Pages: 100, Start: t0, Now: c.Now})
	s := NewServer(w)
	const interval = 50 * time.Second
	step := interval / time.Duration(w.Len())
	etags := make([]string, w.Len())
	end := t0.Add(120 * interval)
	for at := t0; at.Before(end); {
		for id := range w.Len() {
			c.Set(at)
			h, i := id/100, id%100
			r := get(s, h, Path(i), "If-None-Match", etags[id])
			etags[id] = r.Header.Get("ETag")
			at = at.Add(step)
		}
	}
	log := s.Log()
	res := Measure(w, log, t0, t0.Add(20*interval), end)
	th := Predict(w.Rates(), res.PerSecond)
	t.Logf("measured: freshness %.4f, age %v, %.2f pages/s, %d unchanged (%.0f%% 304); theory: interval %v, freshness %.4f, age %v, optimal freshness %.4f",
		res.Freshness, res.Age, res.PerSecond, res.Unchanged(), 100*res.Share304(), th.Interval, th.UniformFreshness, th.UniformAge, th.OptimalFreshness)
	if th.Interval.Round(time.Millisecond) != interval {
		t.Errorf("theory's interval %v at the measured bandwidth, want %v", th.Interval, interval)
	}
	if !near(res.Freshness, th.UniformFreshness, 0.015) || !near(res.Age.Seconds(), th.UniformAge.Seconds(), 0.06*th.UniformAge.Seconds()) {
		t.Errorf("measured freshness %.4f, age %v; theory %.4f, %v", res.Freshness, res.Age, th.UniformFreshness, th.UniformAge)
	}
	if res.Unchanged() == 0 || res.Unchanged200 != 0 || res.Saving() != 1 || res.NeverFetched+res.Late != 0 {
		t.Errorf("unchanged fetches %d (%d as 200), saving %.3f, never fetched %d, late %d", res.Unchanged(), res.Unchanged200, res.Saving(), res.NeverFetched, res.Late)
	}
	if n := res.Unchanged() + res.Changed; n != res.Requests {
		t.Errorf("%d unchanged + changed of %d requests", n, res.Requests)
	}
}
