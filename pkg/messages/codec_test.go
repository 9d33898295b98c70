package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Encode and Decode use a faster JSON library than encoding/json; the wire
// must not notice. These tests hold it to encoding/json: the same bytes out,
// the same values in, and the same refusals.

// odd strings a crawl meets: HTML, quotes, controls, line separators,
// invalid UTF-8, non-ASCII.
var odd = []string{
	"", "plain", `https://example.org/a?b=1&c=<2>#"q"`, "tab\there\nnew\\line", "\x00\x01\x1f\x7f",
	"\u2028\u2029", "bad \xff\xfe utf-8 \xc3", "日本語 ümlaut 🕸", "</script><!--",
}

// samples returns every message type, fields set and unset, with odd
// strings and numbers in them.
func samples() []message {
	at := time.Date(2026, 11, 22, 1, 0, 0, 123456789, time.UTC)
	zoned := time.Date(2026, 11, 22, 3, 4, 5, 0, time.FixedZone("", 2*3600))
	rel := 3.25
	zero := 0.0
	var out []message
	for i, s := range odd {
		score := []float64{0, 0.1, 1e21, 1e-7, -2.5, 123456789.125, 1e20, 5e-324, 1.7976931348623157e308}[i%9]
		links := []Link{{URL: s, Depth: i, Hops: i % 2, Score: score}, {URL: "https://example.org/" + s, Depth: 1}}
		if i%3 == 0 {
			links = nil
		}
		when := []time.Time{at, zoned, {}}[i%3]
		out = append(out,
			&Discovered{V: 1, Partition: i, Via: ViaRedirect, Source: s, Links: links},
			&NewURLs{V: 1, Partition: i, Links: links},
			&FetchTask{V: 1, ID: s, Partition: i, Host: s, URL: s, Depth: i, Hops: i % 3, Score: score, Attempt: 1,
				IssuedAt: at, Deadline: when, NotBefore: when},
			&FetchDone{V: 1, TaskID: s, Partition: i, Host: s, URL: s, Status: 200 + i, Error: s,
				Duration: time.Duration(i) * -time.Millisecond, IP: s, FinishedAt: when, Expired: i%2 == 0,
				Retry: i%3 == 0, RetryAfter: time.Duration(i) * time.Second, Disallowed: i%4 == 0, CrawlDelay: time.Duration(i)},
			&Page{V: 1, TaskID: s, URL: s, Host: s, Partition: i, Depth: i, Hops: i, Status: 200, ContentType: s,
				Headers: map[string]string{"Content-Type": s, s: "x", "Location": s, "z": ""}, Location: s, Error: s,
				FetchedAt: when, Duration: time.Duration(i) * time.Hour, IP: s, BodySize: i << 20, Truncated: i%2 == 1,
				ErrorKind: s, Skipped: s, Encoding: s},
			&Page{V: 1, URL: s, FetchedAt: at, Headers: map[string]string{}},
			&Parsed{V: 1, TaskID: s, URL: s, Status: 0, ContentType: s, Depth: i, FetchedAt: when, Error: s, Title: s,
				Outlinks: []string{s, s + "/x"}, Queued: i, Text: strings.Repeat(s, 50), Headings: []string{s, ""}, Lang: s,
				Charset: s, Canonical: s, NoIndex: true, NoFollow: i%2 == 0, Relevance: []*float64{nil, &rel, &zero}[i%3],
				Relevant: i%2 == 1, Truncated: true},
			&Parsed{V: 1, URL: s, Outlinks: []string{}},
			&DeadLetter{V: 1, Service: s, Subject: s, Stream: s, Sequence: uint64(i) << 40, Deliveries: 3, Reason: s,
				At: when, Data: []byte(s), Headers: map[string][]string{s: {s, ""}, "Nats-Msg-Id": nil}},
		)
	}
	return out
}

// zeroOf returns a new zero value of m's type.
func zeroOf(m message) message { return reflect.New(reflect.TypeOf(m).Elem()).Interface().(message) }

// stdDecode is Decode as it was with encoding/json: what the binaries of a
// rolling upgrade's older half run.
func stdDecode(data []byte, v message) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	if got := *v.version(); got != Version {
		return fmt.Errorf("unsupported schema version %d", got)
	}
	return nil
}

func TestEncodeWritesWhatEncodingJSONWrites(t *testing.T) {
	for _, m := range samples() {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%T): %v", m, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Encode(%T):\n got %s\nwant %s", m, got, want)
		}
	}
}

func TestEncodePageWritesWhatAnUnescapedEncoderWrites(t *testing.T) {
	for _, m := range samples() {
		p, ok := m.(*Page)
		if !ok {
			continue
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(p)
		want := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		got, err := EncodePage(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("EncodePage:\n got %s\nwant %s", got, want)
		}
		back, err := DecodePage(string(got))
		if err != nil || !reflect.DeepEqual(normal(&back), normal(p)) {
			t.Errorf("DecodePage(EncodePage(p)) = %+v, %v; want %+v", back, err, p)
		}
	}
}

// normal is m as it comes back from encoding/json: decoded by it.
func normal(m message) message {
	data, _ := json.Marshal(m)
	out := zeroOf(m)
	_ = json.Unmarshal(data, out)
	return out
}

// A rolling upgrade runs old binaries (encoding/json) and new ones (Encode,
// Decode) side by side, on the same subjects: each must read the other's
// messages as its own.
func TestMixedVersionsReadEachOther(t *testing.T) {
	for _, m := range samples() {
		old, _ := json.Marshal(m)
		fromOld := zeroOf(m)
		if err := Decode(old, fromOld); err != nil {
			t.Fatalf("new reader, old writer: %T: %v", m, err)
		}
		neu, _ := Encode(m)
		fromNew := zeroOf(m)
		if err := stdDecode(neu, fromNew); err != nil {
			t.Fatalf("old reader, new writer: %T: %v", m, err)
		}
		oldOld := normal(m)
		if !reflect.DeepEqual(fromOld, oldOld) || !reflect.DeepEqual(fromNew, oldOld) {
			t.Errorf("%T:\nnew reads old %+v\nold reads new %+v\nold reads old %+v", m, fromOld, fromNew, oldOld)
		}
	}
}

// A later v1 writer adds fields (the contract only ever adds): an older
// reader ignores them. A v2 message is refused by both codecs, so it goes to
// the dead-letter subject rather than being misread.
func TestVersionsOnTheWire(t *testing.T) {
	later := []byte(`{"v":1,"partition":3,"links":[{"url":"https://a.example/","depth":1,"weight":0.5}],"added_in_v1_9":{"x":[1,2]}}`)
	var a, b NewURLs
	if err := Decode(later, &a); err != nil {
		t.Fatalf("a later v1 message: %v", err)
	}
	if err := stdDecode(later, &b); err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("a later v1 message: %+v, encoding/json %+v (%v)", a, b, err)
	}
	for _, data := range []string{`{"v":2,"partition":3,"links":[]}`, `{"partition":3,"links":[]}`} {
		if err := Decode([]byte(data), &NewURLs{}); err == nil || !strings.Contains(err.Error(), "version") {
			t.Errorf("Decode(%s) = %v, want a version error", data, err)
		}
	}
	if _, err := Encode(&FetchTask{V: 2, ID: "x"}); err == nil {
		t.Error("Encode of a message of another version succeeded")
	}
}

// FuzzDecodeLikeEncodingJSON: for any input, Decode accepts what
// encoding/json accepts, refuses what it refuses, and reads the same values
// (a poison message is a poison message to either codec).
func FuzzDecodeLikeEncodingJSON(f *testing.F) {
	for _, m := range samples() {
		data, _ := json.Marshal(m)
		f.Add(data)
	}
	for _, s := range []string{`{"v":1,"links":null}`, `{"V":1,"Partition":"3"}`, `{"v":1.0}`, `{"v":1,"v":2}`,
		`{"v":1,"fetched_at":"2026-11-22T01:00:00+01:00"}`, `{"v":1,"duration_ns":1e3}`, `[]`, `{"v":1} x`, `{"v":1,"headers":{"a":null}}`,
		`{"v":1,"url":"\ud800"}`, `{"v":1,"outlinks":[null,"a"]}`, `{"v":1,"relevance":null}`, `{"v":1,"data":"!!"}`} {
		f.Add([]byte(s))
	}
	types := []message{&Discovered{}, &NewURLs{}, &FetchTask{}, &FetchDone{}, &Page{}, &Parsed{}, &DeadLetter{}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range types {
			want, got := zeroOf(typ), zeroOf(typ)
			werr := stdDecode(data, want)
			gerr := Decode(data, got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%T from %q: encoding/json says %v, Decode says %v", typ, data, werr, gerr)
			}
			if werr == nil && !reflect.DeepEqual(want, got) {
				t.Fatalf("%T from %q:\nencoding/json %+v\nDecode        %+v", typ, data, want, got)
			}
		}
	})
}

// FuzzEncodeLikeEncodingJSON: any strings and numbers, the same bytes.
func FuzzEncodeLikeEncodingJSON(f *testing.F) {
	for _, s := range odd {
		f.Add(s, int64(7), 0.5)
	}
	f.Fuzz(func(t *testing.T, s string, n int64, x float64) {
		at := time.Unix(0, n).UTC()
		for _, m := range []message{
			&Discovered{V: 1, Partition: int(n), Via: s, Source: s, Links: []Link{{URL: s, Depth: int(n), Hops: int(n), Score: x}}},
			&FetchDone{V: 1, TaskID: s, URL: s, Status: int(n), Error: s, Duration: time.Duration(n), FinishedAt: at, RetryAfter: time.Duration(n)},
			&Page{V: 1, URL: s, Headers: map[string]string{s: s, "a": s}, FetchedAt: at, Location: s},
			&Parsed{V: 1, URL: s, Outlinks: []string{s}, Title: s, Text: s, Relevance: &x, FetchedAt: at},
		} {
			want, werr := json.Marshal(m)
			got, gerr := Encode(m)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("%T:\nencoding/json %s (%v)\nEncode        %s (%v)", m, want, werr, got, gerr)
			}
		}
	})
}

// Anyone may publish on discovered: a message nested a million deep is
// refused as encoding/json refuses it (max depth 10,000), not a crash.
func TestDeepNestingRefused(t *testing.T) {
	for _, n := range []int{9000, 11000, 1_000_000} {
		for _, data := range []string{
			`{"v":1,"unknown":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"partition":2,"links":[]}`,
			`{"v":1,"links":[{"url":` + strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) + `}]}`,
		} {
			var want, got NewURLs
			werr := stdDecode([]byte(data), &want)
			gerr := Decode([]byte(data), &got)
			if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(want, got) && werr == nil {
				t.Errorf("depth %d: encoding/json %v %+v, Decode %v %+v", n, werr, want, gerr, got)
			}
		}
	}
}
