package fetcher

import (
	"errors"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/warc"
)

func TestConditionalSendsTheLastValidators(t *testing.T) {
	o := conditional(messages.FetchTask{Revisit: &messages.Revisit{Visits: 1, ETag: `"v1"`, LastModified: "Mon, 02 Jan 2006 15:04:05 GMT"}})
	if o.IfNoneMatch != `"v1"` || o.IfModifiedSince != "Mon, 02 Jan 2006 15:04:05 GMT" {
		t.Fatalf("conditional = %+v", o)
	}
	if o := conditional(messages.FetchTask{}); o.IfNoneMatch != "" || o.IfModifiedSince != "" {
		t.Fatalf("a task without a record sent validators: %+v", o)
	}
}

func TestRevisitedTellsChange(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	body := []byte("<p>hello</p>")
	ok := func(status int, body []byte, headers map[string]string) Response {
		return Response{Status: status, Body: body, Headers: headers}
	}
	first, changed := revisited(messages.Revisit{ChangeFreq: "daily", Lastmod: t1}, ok(200, body, map[string]string{"ETag": `"v1"`}), t1)
	if changed != nil || first.Visits != 1 || first.ETag != `"v1"` || first.Digest != warc.Digest(body) || !first.Since.Equal(t1) ||
		first.ChangeFreq != "" || !first.Lastmod.IsZero() {
		t.Fatalf("first visit: %+v, changed %v", first, changed)
	}
	for _, c := range []struct {
		name    string
		resp    Response
		changed *bool
		since   time.Time
	}{
		{"304", ok(304, nil, nil), ptr(false), t1},
		{"same body", ok(200, body, nil), ptr(false), t1},
		{"new body", ok(200, []byte("<p>bye</p>"), nil), ptr(true), t2},
		{"error", Response{Err: errors.New("reset")}, nil, t1},
	} {
		got, changed := revisited(first, c.resp, t2)
		if (changed == nil) != (c.changed == nil) || (changed != nil && *changed != *c.changed) || got.Visits != 2 || !got.Since.Equal(c.since) {
			t.Errorf("%s: %+v, changed %v; want changed %v since %v", c.name, got, changed, c.changed, c.since)
		}
		if got.ETag != `"v1"` {
			t.Errorf("%s: validator lost: %+v", c.name, got)
		}
	}
}

func ptr[T any](v T) *T { return &v }
