// Package revisit decides when a fetched URL is due again: an adaptive
// interval after Nutch's AdaptiveFetchSchedule, seeded by what the web says
// about a page (a sitemap's changefreq and lastmod, a Last-Modified header).
//
// The rule, per visit:
//   - changed since the last visit: the interval shrinks by DecRate (0.2);
//   - unchanged: it grows by IncRate (0.4);
//   - with SyncDelta, a page last modified long before this visit is not
//     changing at the rate the interval assumes: the interval grows to at
//     least the time since that modification, and the next visit is counted
//     from a reference time SyncDeltaRate (0.3) of that span back, so that a
//     page found stale is not left stale for a whole new interval;
//   - the result stays within [Min, Max].
//
// Growing faster than shrinking (0.4 against 0.2) is Nutch's choice and
// ours: most pages do not change between visits, and a wasted visit costs
// bandwidth that a changing page could use; a page that starts changing
// pulls its interval down within a few visits.
package revisit

import (
	"fmt"
	"math"
	"time"
)

// Schedule holds the rule's parameters. The zero value is not usable: take
// NewSchedule and change fields as needed.
type Schedule struct {
	Min, Max      time.Duration // bounds of any interval
	IncRate       float64       // growth after an unchanged visit (Nutch db.fetch.schedule.adaptive.inc_rate)
	DecRate       float64       // shrink after a changed visit (dec_rate)
	SyncDelta     bool          // follow the page's own modification time (sync_delta)
	SyncDeltaRate float64       // how far back the reference time goes (sync_delta_rate)
}

// NewSchedule returns Nutch's defaults within [min, max], or an error that
// says which bound is wrong.
func NewSchedule(min, max time.Duration) (Schedule, error) {
	if min <= 0 {
		return Schedule{}, fmt.Errorf("revisit: --revisit-min %v: give a positive duration such as 1h", min)
	}
	if max < min {
		return Schedule{}, fmt.Errorf("revisit: --revisit-max %v is below --revisit-min %v: give a maximum at least the minimum", max, min)
	}
	return Schedule{Min: min, Max: max, IncRate: 0.4, DecRate: 0.2, SyncDelta: true, SyncDeltaRate: 0.3}, nil
}

// Hint is what the web says about a page before or at its first visit.
type Hint struct {
	ChangeFreq   string    // a sitemap's changefreq ("" when none)
	LastModified time.Time // a sitemap's lastmod or the Last-Modified header (zero when none)
}

// changeFreq maps the sitemap protocol's words onto intervals; the protocol
// calls them hints, so they only seed the first interval.
var changeFreq = map[string]time.Duration{
	"hourly":  time.Hour,
	"daily":   24 * time.Hour,
	"weekly":  7 * 24 * time.Hour,
	"monthly": 30 * 24 * time.Hour,
	"yearly":  365 * 24 * time.Hour,
}

// Initial is the first interval of a page fetched at fetched. In order: a
// sitemap's changefreq ("always" is Min, "never" Max); else the time since
// the page was last modified (a page untouched for a month is unlikely to
// change tomorrow); else the geometric mean of Min and Max, a middle that
// needs as many visits to reach either bound.
func (s Schedule) Initial(h Hint, fetched time.Time) time.Duration {
	switch h.ChangeFreq {
	case "always":
		return s.Min
	case "never":
		return s.Max
	}
	if d, ok := changeFreq[h.ChangeFreq]; ok {
		return s.clamp(d)
	}
	if !h.LastModified.IsZero() && h.LastModified.Before(fetched) {
		return s.clamp(fetched.Sub(h.LastModified))
	}
	return s.clamp(time.Duration(math.Sqrt(float64(s.Min) * float64(s.Max))))
}

// Visit is what one fetch of a page found.
type Visit struct {
	Fetched  time.Time // when this visit fetched it
	Changed  bool      // content or validators differ from the last visit
	Modified time.Time // the page's Last-Modified, zero when unknown
}

// Next returns the page's new interval and when it is next due, after a
// visit v, given the interval that led to this visit.
func (s Schedule) Next(prev time.Duration, v Visit) (interval time.Duration, due time.Time) {
	f := float64(prev)
	if v.Changed {
		f *= 1 - s.DecRate
	} else {
		f *= 1 + s.IncRate
	}
	ref := v.Fetched
	if s.SyncDelta && !v.Modified.IsZero() && v.Modified.Before(v.Fetched) {
		delta := v.Fetched.Sub(v.Modified)
		if float64(delta) > f {
			f = float64(delta)
		}
		ref = v.Fetched.Add(-time.Duration(math.Round(float64(delta) * s.SyncDeltaRate)))
	}
	interval = s.clamp(time.Duration(math.Min(f, float64(math.MaxInt64))))
	due = ref.Add(interval)
	// A reference time far back must not make a page due in the past: the
	// soonest is one Min from now.
	if earliest := v.Fetched.Add(s.Min); due.Before(earliest) {
		due = earliest
	}
	return interval, due
}

func (s Schedule) clamp(d time.Duration) time.Duration {
	return min(max(d, s.Min), s.Max)
}
