package parser

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/traps"
)

// trapPage links to two good pages and to one trap of each kind, with the
// default limits (--max-url-length 256, --max-path-depth 20,
// --max-repeated-segments 2, --max-query-params 20) and --deny /private/.
func trapPage() (body string, want map[traps.Reason]int64) {
	var deep, query strings.Builder
	for i := range 21 {
		fmt.Fprintf(&deep, "/d%d", i)
		if i > 0 {
			query.WriteByte('&')
		}
		fmt.Fprintf(&query, "f%d=1", i)
	}
	links := []string{
		"/good/one.html",
		"/calendar?month=2024-06",          // a calendar: only the host budget bounds it
		"/" + strings.Repeat("x", 300),     // url_length, dropped before resolving
		"/dir/" + strings.Repeat("y", 250), // url_length once resolved
		deep.String(),                      // path_depth
		deep.String() + "/",                // path_depth
		"a/b/a/b/a/b/",                     // repeated_segment, relative to /dir/
		"/dir/dir/dir/p.html",              // repeated_segment
		"/shop?" + query.String(),          // query_params
		"/shop?f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1&f=1", // query_params: repeated names count
		"/private/p",        // pattern
		"/a%2Fa%2Fa%2Fa/ok", // one segment: no trap
		"/good/one.html;jsessionid=0123456789ABCDEF", // the same page once cleaned
	}
	var b strings.Builder
	b.WriteString("<title>Traps</title>")
	for _, l := range links {
		fmt.Fprintf(&b, "<a href=%q>link</a>\n", l)
	}
	return b.String(), map[traps.Reason]int64{traps.URLLength: 2, traps.PathDepth: 2, traps.RepeatedSegment: 2, traps.QueryParams: 2, traps.Pattern: 1}
}

// Issue 18: a page's trap links are not followed, each is counted by its
// reason (and in the old total), and they stay listed as outlinks.
func TestTrapLinksExcluded(t *testing.T) {
	s := newTestService(t, deny(t, "/private/"), dropTracking)
	body, want := trapPage()
	doc, follow, _ := parseHTML(t, s, 1, nil, body)
	if w := []string{"/good/one.html", "/calendar?month=2024-06", "/a%2Fa%2Fa%2Fa/ok"}; !slices.Equal(follow, w) {
		t.Errorf("followed %q, want %q", follow, w)
	}
	var total int64
	for _, r := range traps.Excluded() {
		if got := s.Stats.Excluded[r].Load(); got != want[r] {
			t.Errorf("excluded for %s: %d, want %d", r, got, want[r])
		}
		total += want[r]
	}
	if s.Stats.Filtered.Load() != total {
		t.Errorf("filtered %d, want the sum %d", s.Stats.Filtered.Load(), total)
	}
	if len(doc.Outlinks) != 10 || doc.Queued != 3 { // 13 links: two too long (not resolved, or longer once resolved), one a repeat once cleaned
		t.Errorf("%d outlinks %q, %d queued", len(doc.Outlinks), doc.Outlinks, doc.Queued)
	}

	// 0 turns each limit off.
	off := newTestService(t, deny(t, "/private/"), func(o *Options) {
		o.MaxURLLength, o.MaxPathDepth, o.MaxRepeatedSegments, o.MaxQueryParams = 1024, 0, 0, 0
	})
	_, follow, _ = parseHTML(t, off, 1, nil, body)
	if len(follow) != 12 || off.Stats.Filtered.Load() != 1 || off.Stats.Excluded[traps.Pattern].Load() != 1 {
		t.Errorf("limits off: followed %d %q, filtered %d", len(follow), follow, off.Stats.Filtered.Load())
	}

	// A redirect to a trap URL is not followed either.
	r := newTestService(t)
	page := messages.Page{URL: "http://a.test/old", Status: 301, Location: "http://a.test/a/b/a/b/a/b", Depth: 1}
	rdoc, rfollow, err := r.parse(t.Context(), page, nil)
	if err != nil || len(rfollow) != 0 || r.Stats.Excluded[traps.RepeatedSegment].Load() != 1 || len(rdoc.Outlinks) != 1 {
		t.Errorf("redirect to a trap: followed %+v, excluded %d, outlinks %q, %v", rfollow, r.Stats.Excluded[traps.RepeatedSegment].Load(), rdoc.Outlinks, err)
	}
}

// End to end: the parser service publishes none of the trap links to dedup,
// and its metrics count them by reason.
func TestTrapLinksNotPublished(t *testing.T) {
	js, names := testbus.Start(t, 1)
	reg := prometheus.NewRegistry()
	svc, err := New(Options{
		JS: js, Names: names, Scope: hostScope{"a.test": true}, PartitionCount: 1, Workers: 2,
		MaxDepth: -1, MaxRedirects: 5, MaxURLLength: 256, MaxPathDepth: 20, MaxRepeatedSegments: 2, MaxQueryParams: 20,
		MaxDeliver: 10, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	body, want := trapPage()
	want[traps.Pattern] = 0 // no --deny here: /private/p is followed
	publishPage(t, js, names, messages.Page{TaskID: "traps", URL: "http://a.test/dir/p.html", Depth: 1}, []byte(body))
	docs, _ := parsedDocs(t, js, names, 1)
	parserSettled(t, js, names)

	var got []string
	for {
		m := testbus.Next(t, js, names.StreamDiscovered(), names.ConsumerDedup(0), time.Second)
		if m == nil {
			break
		}
		var d messages.Discovered
		if err := messages.Decode(m.Data(), &d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.Links {
			got = append(got, strings.TrimPrefix(l.URL, "http://a.test"))
		}
	}
	slices.Sort(got)
	w := []string{"/a%2Fa%2Fa%2Fa/ok", "/calendar?month=2024-06", "/good/one.html", "/good/one.html;jsessionid=0123456789ABCDEF", "/private/p"}
	if !slices.Equal(got, w) {
		t.Errorf("links handed to dedup %q, want %q", got, w)
	}
	if d := docs["traps"]; d.Queued != len(w) {
		t.Errorf("document says %d queued", d.Queued)
	}
	counters, _ := heartbeat.Flatten(reg)
	for _, r := range traps.Excluded() {
		key := `trawler_parser_links_excluded_total{reason="` + r.String() + `"}`
		if v, ok := counters[key]; !ok || v != float64(want[r]) {
			t.Errorf("%s = %v (present %v), want %d", key, v, ok, want[r])
		}
	}
	if v := counters["trawler_parser_links_filtered_total"]; v != 8 {
		t.Errorf("trawler_parser_links_filtered_total = %v, want 8", v)
	}
}
