package revisit

import (
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

func schedule(t *testing.T) Schedule {
	t.Helper()
	s, err := NewSchedule(time.Hour, 30*day)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewScheduleRejectsBadBounds(t *testing.T) {
	for _, c := range []struct {
		min, max time.Duration
		want     string
	}{{0, day, "--revisit-min"}, {day, time.Hour, "below --revisit-min"}} {
		if _, err := NewSchedule(c.min, c.max); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSchedule(%v, %v) = %v, want an error naming %q", c.min, c.max, err, c.want)
		}
	}
}

func TestInitial(t *testing.T) {
	s := schedule(t)
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		h    Hint
		want time.Duration
	}{
		{"always", Hint{ChangeFreq: "always"}, time.Hour},
		{"never", Hint{ChangeFreq: "never"}, 30 * day},
		{"daily", Hint{ChangeFreq: "daily"}, day},
		{"yearly, clamped", Hint{ChangeFreq: "yearly"}, 30 * day},
		{"changefreq wins over lastmod", Hint{ChangeFreq: "hourly", LastModified: now.Add(-5 * day)}, time.Hour},
		{"untouched for five days", Hint{LastModified: now.Add(-5 * day)}, 5 * day},
		{"modified a minute ago, clamped", Hint{LastModified: now.Add(-time.Minute)}, time.Hour},
		{"lastmod in the future: ignored", Hint{LastModified: now.Add(day)}, 96598136627972},
		{"nothing known: geometric mean", Hint{}, 96598136627972},
	} {
		if got := s.Initial(c.h, now); got.Round(time.Second) != c.want.Round(time.Second) {
			t.Errorf("%s: Initial = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNext(t *testing.T) {
	s := schedule(t)
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name         string
		prev         time.Duration
		v            Visit
		wantInterval time.Duration
		wantDue      time.Time
	}{
		{"unchanged grows by 0.4", 10 * time.Hour, Visit{Fetched: now}, 14 * time.Hour, now.Add(14 * time.Hour)},
		{"changed shrinks by 0.2", 10 * time.Hour, Visit{Fetched: now, Changed: true}, 8 * time.Hour, now.Add(8 * time.Hour)},
		{"never under min", time.Hour, Visit{Fetched: now, Changed: true}, time.Hour, now.Add(time.Hour)},
		{"never over max", 29 * day, Visit{Fetched: now}, 30 * day, now.Add(30 * day)},
		// Modified 10 days ago but visited every 2 days: the interval
		// follows the page (10 days) and counts from 3 days back.
		{"sync delta", 2 * day, Visit{Fetched: now, Modified: now.Add(-10 * day)}, 10 * day, now.Add(7 * day)},
		// A recent modification leaves the rule alone but the reference
		// time still moves back by 0.3 of it.
		{"recent modification", 10 * time.Hour, Visit{Fetched: now, Changed: true, Modified: now.Add(-2 * time.Hour)}, 8 * time.Hour, now.Add(8*time.Hour - 36*time.Minute)},
		// The reference far back never makes the next visit sooner than min.
		{"due no sooner than min", time.Hour, Visit{Fetched: now, Changed: true, Modified: now.Add(-time.Hour)}, time.Hour, now.Add(time.Hour)},
	} {
		iv, due := s.Next(c.prev, c.v)
		if iv != c.wantInterval || !due.Equal(c.wantDue) {
			t.Errorf("%s: Next = %v, due %v; want %v, due %v", c.name, iv, due.Sub(now), c.wantInterval, c.wantDue.Sub(now))
		}
	}
}

// Unchanged visits walk the interval up to the maximum and changed ones back
// down to the minimum, in a bounded number of visits.
func TestNextConverges(t *testing.T) {
	s := schedule(t)
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	iv, n := time.Hour, 0
	for ; iv < s.Max; n++ {
		iv, _ = s.Next(iv, Visit{Fetched: now})
	}
	if n > 20 {
		t.Errorf("%d unchanged visits from min to max, want at most 20", n)
	}
	for n = 0; iv > s.Min; n++ {
		iv, _ = s.Next(iv, Visit{Fetched: now, Changed: true})
	}
	if n > 30 {
		t.Errorf("%d changed visits from max to min, want at most 30", n)
	}
}
