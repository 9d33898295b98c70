package frontier

import (
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/revisit"
)

// nextVisit: the first visit's interval comes from the hints (a sitemap's
// changefreq), later ones from the rule (unchanged grows by 0.4, changed
// shrinks by 0.2, a failed fetch counts as unchanged); a disallowed URL or
// a crawl without revisits schedules nothing; the entry keeps the task's
// place (depth, score) and the fetcher's record.
func TestNextVisit(t *testing.T) {
	sched, err := revisit.NewSchedule(time.Hour, 1000*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pt := &partition{s: &Service{o: Options{Revisit: &sched}}}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	task := messages.FetchTask{Host: "a.test", URL: "http://a.test/x", Depth: 2, Score: 0.5,
		Revisit: &messages.Revisit{ChangeFreq: "daily"}}
	rec := &messages.Revisit{Visits: 1, ETag: `"e"`}
	first := pt.nextVisit(task, messages.FetchDone{Revisit: rec}, now)
	if first == nil || first.Queued.Link.Revisit.Interval != 24*time.Hour || !first.Due.Equal(now.Add(24*time.Hour)) ||
		first.Queued.Link.Depth != 2 || first.Queued.Link.Score != 0.5 || first.Queued.Link.Revisit.ETag != `"e"` {
		t.Fatalf("first visit: %+v", first)
	}
	task.Revisit = first.Queued.Link.Revisit
	for _, c := range []struct {
		name    string
		changed *bool
		want    time.Duration
	}{
		{"unchanged", ptr(false), time.Duration(float64(24*time.Hour) * 1.4)},
		{"changed", ptr(true), time.Duration(float64(24*time.Hour) * 0.8)},
		{"failed", nil, time.Duration(float64(24*time.Hour) * 1.4)},
	} {
		got := pt.nextVisit(task, messages.FetchDone{Revisit: &messages.Revisit{Visits: 2}, Changed: c.changed}, now)
		if got == nil || got.Queued.Link.Revisit.Interval != c.want || !got.Due.Equal(now.Add(c.want)) {
			t.Errorf("%s: %+v; want interval %v", c.name, got, c.want)
		}
	}
	if got := pt.nextVisit(task, messages.FetchDone{Revisit: rec, Disallowed: true}, now); got != nil {
		t.Errorf("a disallowed URL was scheduled: %+v", got)
	}
	off := &partition{s: &Service{}}
	if got := off.nextVisit(task, messages.FetchDone{Revisit: rec}, now); got != nil {
		t.Errorf("scheduled without revisits: %+v", got)
	}
}

func ptr[T any](v T) *T { return &v }
