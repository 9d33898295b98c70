package freshweb

import (
	"math"
	"sort"
	"time"
)

// History is what Measure needs of a web: how many pages, and when each
// version of each page stopped being current. *Web is one; tests write
// their own.
type History interface {
	Len() int
	// Superseded is when version v of page id was replaced by the next;
	// ok is false when it never is (a page that does not change).
	Superseded(id, v int) (t time.Time, ok bool)
}

// Result is what a crawl achieved over a measured window, from the
// server's log.
type Result struct {
	From, To time.Time // the window
	Pages    int       // pages of the web
	Changing int       // pages that change

	// Freshness is Cho and Garcia-Molina's average freshness: the mean,
	// over pages and over every instant of the window, of 1 when the copy
	// the crawler last fetched is the page's current version, else 0. Age
	// is their average age: 0 for a fresh copy, else the time since the
	// first change the copy misses. A page not yet fetched counts as stale
	// since the crawl's start. Both are exact time averages (the limit of
	// sampling ever more densely), not estimates.
	Freshness float64
	Age       time.Duration
	// ChangingFreshness and ChangingAge are the same over the pages that
	// change: pages that never do are fresh once fetched whatever the
	// policy, and dilute the difference between policies.
	ChangingFreshness float64
	ChangingAge       time.Duration

	// Requests are the page fetches (GET answered 200 or 304) that began
	// in the window; PerSecond is their rate. Other is every other
	// request in the window (robots.txt, 404s, other methods).
	Requests  int
	PerSecond float64
	Other     int
	// Of Requests: First fetched a page for the first time; Changed got a
	// version other than the previous fetch's; Unchanged200 and
	// Unchanged304 got the same version again, as a whole page or as a
	// 304.
	First, Changed, Unchanged200, Unchanged304 int
	// Bytes on the wire (status line, headers, body; the body alone when
	// the log has no wire count) of the unchanged fetches, 200s and 304s.
	UnchangedBytes200, UnchangedBytes304 int64
	// UnchangedFull is what the unchanged fetches would have cost as 200s:
	// each version's body plus the mean header bytes of the window's 200s.
	UnchangedFull int64
	// NeverFetched is how many pages had no fetch before the window's end,
	// Late how many had their first after its start.
	NeverFetched, Late int
}

// Unchanged is the fetches that found the page as the crawler's previous
// fetch left it.
func (r Result) Unchanged() int { return r.Unchanged200 + r.Unchanged304 }

// UnchangedBytes is the bytes of the unchanged fetches.
func (r Result) UnchangedBytes() int64 { return r.UnchangedBytes200 + r.UnchangedBytes304 }

// BytesPerUnchanged is the mean bytes of an unchanged fetch.
func (r Result) BytesPerUnchanged() float64 {
	return float64(r.UnchangedBytes()) / max(float64(r.Unchanged()), 1)
}

// Share304 is the share of the unchanged fetches answered 304.
func (r Result) Share304() float64 { return float64(r.Unchanged304) / max(float64(r.Unchanged()), 1) }

// Saving is 1 - (bytes of the unchanged fetches) / (what they would have
// cost as 200s): the validators' saving within this run.
func (r Result) Saving() float64 {
	if r.UnchangedFull == 0 {
		return 0
	}
	return 1 - float64(r.UnchangedBytes())/float64(r.UnchangedFull)
}

// Saving304 is the saving of one run over another on the same web at the
// same bandwidth, per unchanged fetch: 1 - with/without, with and without
// their mean bytes per unchanged fetch (the measure: a run with
// validators against one without).
func Saving304(with, without Result) float64 {
	if without.BytesPerUnchanged() == 0 {
		return 0
	}
	return 1 - with.BytesPerUnchanged()/without.BytesPerUnchanged()
}

// IsFetch reports whether r fetched a page: a GET answered 200 or 304.
func IsFetch(r Request) bool {
	return r.ID >= 0 && r.Version >= 0 && r.Method == "GET" && (r.Status == 200 || r.Status == 304)
}

// Measure computes freshness, age and the bytes of unchanged fetches over
// the window [from, to) from a server's log. start is when the crawl began:
// a page the crawler has not fetched yet is stale since then. Fetches
// before the window count for what the crawler holds at its start (a
// warm-up), not for Requests and bytes.
func Measure(h History, log []Request, start, from, to time.Time) Result {
	res := Result{From: from, To: to, Pages: h.Len()}
	win := to.Sub(from).Seconds()
	if win <= 0 || res.Pages == 0 {
		return res
	}
	// Fetches by page, in time order; the 200s' header bytes.
	byPage := make([][]Request, res.Pages)
	var hdr, hdrN int64
	for _, r := range log {
		inWin := !r.Start.Before(from) && r.Start.Before(to)
		if !IsFetch(r) || r.ID >= res.Pages {
			if inWin {
				res.Other++
			}
			continue
		}
		byPage[r.ID] = append(byPage[r.ID], r)
		if inWin && r.Status == 200 && r.Wire > 0 {
			hdr += r.Wire - r.Body
			hdrN++
		}
	}
	if hdrN > 0 {
		hdr /= hdrN
	}
	sec := func(t time.Time) float64 { return t.Sub(from).Seconds() }
	origin := min(sec(start), 0) // a page not fetched yet is stale since the crawl's start
	var fresh, age, cFresh, cAge float64
	for id, fs := range byPage {
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start.Before(fs[j].Start) })
		var pf, pa float64 // this page's fresh seconds and age integral (s²)
		// seg adds [a, b) during which the crawler held version held (-1:
		// none), clipped to the window.
		seg := func(a, b float64, held int) {
			a, b = max(a, 0), min(b, win)
			if b <= a {
				return
			}
			stale := origin
			if held >= 0 {
				t, ok := h.Superseded(id, held)
				if !ok {
					pf += b - a
					return
				}
				stale = sec(t)
				pf += max(0, min(b, stale)-a)
			}
			if lo := max(a, stale); b > lo {
				pa += ((b-stale)*(b-stale) - (lo-stale)*(lo-stale)) / 2
			}
		}
		held, at := -1, math.Inf(-1)
		for _, f := range fs {
			t := sec(f.Start)
			seg(at, t, held)
			if t >= 0 && t < win {
				res.Requests++
				switch {
				case held < 0:
					res.First++
				case f.Version != held:
					res.Changed++
				default:
					bytes := f.Wire
					if bytes == 0 {
						bytes = f.Body
					}
					if f.Status == 304 {
						res.Unchanged304++
						res.UnchangedBytes304 += bytes
					} else {
						res.Unchanged200++
						res.UnchangedBytes200 += bytes
					}
					if hdrN > 0 {
						res.UnchangedFull += f.Size + hdr
					} else {
						res.UnchangedFull += f.Size
					}
				}
			}
			held, at = f.Version, t
		}
		seg(at, math.Inf(1), held)
		switch {
		case len(fs) == 0 || sec(fs[0].Start) >= win:
			res.NeverFetched++
		case sec(fs[0].Start) > 0:
			res.Late++
		}
		fresh += pf
		age += pa
		if _, ok := h.Superseded(id, 0); ok {
			res.Changing++
			cFresh += pf
			cAge += pa
		}
	}
	n := float64(res.Pages) * win
	res.Freshness = fresh / n
	res.Age = seconds(age / n)
	if res.Changing > 0 {
		n := float64(res.Changing) * win
		res.ChangingFreshness = cFresh / n
		res.ChangingAge = seconds(cAge / n)
	}
	res.PerSecond = float64(res.Requests) / win
	return res
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
