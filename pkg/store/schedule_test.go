package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// The schedule's compact value gives back the entry it was made from, to
// the millisecond, whatever the record holds (nothing, an empty record, a
// full one, a digest of another algorithm).
func TestScheduleValueRoundTrip(t *testing.T) {
	due := time.UnixMilli(1795000000123)
	since := time.UnixMilli(1794000000456).UTC()
	for name, l := range map[string]messages.Link{
		"no record":    {URL: "http://a.test/1", Depth: 2},
		"empty record": {URL: "http://a.test/2", Revisit: &messages.Revisit{}},
		"full": {URL: "http://a.test/3", Depth: 3, Hops: 1, Score: 0.25, Sitemap: true, Revisit: &messages.Revisit{
			Visits: 4, Interval: 26 * time.Hour, ETag: `W/"5e1f"`, LastModified: "Tue, 03 Nov 2026 08:12:44 GMT",
			Digest: "sha1:2FQ3MZJXR6WQYVLNL4KXHUUDTNDEZ3OB", Since: since, ChangeFreq: "daily", Lastmod: since}},
		"other digest": {URL: "http://a.test/4", Revisit: &messages.Revisit{Visits: 1, Digest: "sha256:abc"}},
	} {
		in := Scheduled{Due: due, Queued: Queued{Host: "a.test", Link: l, Attempt: 1}}
		url, data, err := encodeSched(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := decodeSched(url, data, due)
		if err != nil || !reflect.DeepEqual(out, in) {
			t.Errorf("%s: %s decodes to %+v (%v); want %+v", name, data, out, err, in)
		}
	}
	if _, _, err := encodeSched(Scheduled{Queued: Queued{Host: "a.test"}}); err == nil {
		t.Error("an entry without a URL was encoded")
	}
}
