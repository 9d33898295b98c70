package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// The store's codec (codec_goccy.go) must write what encoding/json writes
// for its entries, byte for byte: the Redis store's Lua scripts match the
// in-flight entry Go writes (inFlightPrefix), and a store written by one
// build is read by the next. And it must read back what it wrote.
func TestCodecWritesWhatEncodingJSONWrites(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC)
	zoned := time.Date(2026, 11, 30, 4, 5, 6, 0, time.FixedZone("", -5*3600))
	odd := []string{"", "plain", `https://example.org/a?b=1&c=<2>#"q"`, "tab\there\nnew\\line", "\x00\x01\x1f\x7f",
		"\u2028\u2029", "bad \xff\xfe utf-8 \xc3", "日本語 ümlaut 🕸", "</script><!--"}
	var values []any
	for i, s := range odd {
		score := []float64{0, 0.1, 1e21, 1e-7, -2.5, 123456789.125}[i%6]
		var rv *messages.Revisit
		if i%2 == 0 {
			rv = &messages.Revisit{Visits: i, Interval: time.Duration(i) * time.Hour, ETag: s, LastModified: s, Digest: s,
				Since: []time.Time{at, zoned, {}}[i%3], ChangeFreq: s, Lastmod: at}
		}
		link := messages.Link{URL: s, Depth: i, Hops: i % 3, Score: score, Sitemap: i%3 == 0, Revisit: rv}
		q := Queued{Host: s, Link: link, Attempt: i}
		in := InFlight{Task: messages.FetchTask{V: 1, ID: s, Partition: i, Host: s, URL: s, Depth: i, Hops: i % 2, Score: score,
			Attempt: i + 1, IssuedAt: at, Deadline: zoned, NotBefore: []time.Time{at, {}}[i%2], Sitemap: i%2 == 1, Revisit: rv},
			LeaseUntil: []time.Time{at, zoned, {}}[i%3], Next: &Next{}}
		sq := q
		sq.Host, sq.Link.URL = "host.example", "http://host.example/"+s // the schedule checks them
		_, sched, err := encodeSched(Scheduled{Due: at, Queued: sq})
		if err != nil {
			t.Fatal(err)
		}
		var sv schedValue
		if err := json.Unmarshal(sched, &sv); err != nil {
			t.Fatal(err)
		}
		values = append(values, q, in, sv, s)
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshal(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%T:\n got %s\nwant %s", v, got, want)
			continue
		}
		back := reflect.New(reflect.TypeOf(v))
		if err := unmarshal(got, back.Interface()); err != nil {
			t.Fatalf("%T: read back %s: %v", v, got, err)
		}
		std := reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(got, std.Interface()); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), std.Elem().Interface()) {
			t.Errorf("%T: read back\n %+v\nencoding/json reads\n %+v", v, back.Elem().Interface(), std.Elem().Interface())
		}
	}
}
