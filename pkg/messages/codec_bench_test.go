package messages

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU the process has used, every thread's (the garbage
// collector's too): on a shared machine CPU per op moves far less than wall
// time per op, and it is what a crawl's profile counts.
func cpuTime() time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// The message mix one crawled page puts on the bus, each message encoded once
// and decoded once: a fetch task (frontier -> fetcher), the page's
// Trawler-Page header (fetcher -> parser), its FetchDone (fetcher ->
// frontier), one partition's batch of 40 links (parser -> dedup), the same
// 40 as new URLs (dedup -> frontier) and the parsed document with 40
// outlinks and no text (parser -> taps). pkg/messages/codecbench measures
// the other candidate codecs (faster JSON libraries, protobuf) on the same
// mix; TestMixSize keeps the two in step.
//
//	go test -run '^$' -bench Codec -benchmem -count 6 ./pkg/messages
func benchMix() []message {
	at := time.Date(2026, 11, 22, 1, 0, 0, 123456789, time.UTC)
	const id = "Zb3kq9xT1mWQe8rLpV0c2N"
	const host = "www.example-news.org"
	const pageURL = "https://www.example-news.org/world/2026/11/story-3999-on-page.html"
	url := func(i int) string {
		return fmt.Sprintf("https://www.example-news.org/world/2026/11/story-%04d-on-page.html", 4000+i)
	}
	links := make([]Link, 40)
	outlinks := make([]string, 40)
	for i := range links {
		links[i] = Link{URL: url(i), Depth: 3}
		outlinks[i] = url(i)
	}
	return []message{
		&FetchTask{V: 1, ID: id, Partition: 17, Host: host, URL: pageURL, Depth: 2, Attempt: 1,
			IssuedAt: at, Deadline: at.Add(10 * time.Minute)},
		&Page{V: 1, TaskID: id, URL: pageURL, Host: host, Partition: 17, Depth: 2, Status: 200,
			ContentType: "text/html; charset=utf-8",
			Headers: map[string]string{
				"Content-Type":     "text/html; charset=utf-8",
				"Content-Length":   "48213",
				"Content-Language": "en",
				"Last-Modified":    "Sat, 21 Nov 2026 22:14:03 GMT",
				"ETag":             `W/"bc55-18f2a1c9e4d"`,
				"Cache-Control":    "public, max-age=300, stale-while-revalidate=60",
				"Expires":          "Sun, 22 Nov 2026 01:05:00 GMT",
				"Link":             `<https://www.example-news.org/world/2026/11/story-3999-on-page.html>; rel="canonical"`,
				"X-Robots-Tag":     "max-image-preview:large",
				"Retry-After":      "120",
			},
			FetchedAt: at.Add(81 * time.Millisecond), Duration: 81234567 * time.Nanosecond, IP: "93.184.215.14", BodySize: 48213},
		&FetchDone{V: 1, TaskID: id, Partition: 17, Host: host, URL: pageURL, Status: 200,
			Duration: 81234567 * time.Nanosecond, IP: "93.184.215.14", FinishedAt: at.Add(81 * time.Millisecond)},
		&Discovered{V: 1, Partition: 17, Via: ViaLink, Source: pageURL, Links: links},
		&NewURLs{V: 1, Partition: 17, Links: links},
		&Parsed{V: 1, TaskID: id, URL: pageURL, Status: 200, ContentType: "text/html; charset=utf-8",
			Depth: 2, FetchedAt: at.Add(81 * time.Millisecond), Title: "Story 3999: what the page is about, in a headline",
			Outlinks: outlinks, Queued: 40, Lang: "en", Charset: "utf-8", Canonical: pageURL},
	}
}

// mixWireBytes is the mix's size as JSON; codecbench.TestMixSize pins the
// same number for its copy.
const mixWireBytes = 11626

func TestMixSize(t *testing.T) {
	n := 0
	for _, m := range benchMix() {
		data, _ := json.Marshal(m)
		n += len(data)
	}
	if n != mixWireBytes {
		t.Errorf("the mix is %d bytes of JSON, want %d: change codecbench's copy too", n, mixWireBytes)
	}
}

func BenchmarkCodec(b *testing.B) {
	for _, c := range []struct {
		name string
		enc  func(message) ([]byte, error)
		dec  func([]byte, message) error
	}{
		{"encoding-json", func(m message) ([]byte, error) { return json.Marshal(m) }, stdDecode},
		{"messages", Encode, Decode},
	} {
		b.Run(c.name, func(b *testing.B) {
			mix := benchMix()
			wire := 0
			for _, m := range mix {
				data, _ := c.enc(m)
				wire += len(data)
			}
			b.ReportAllocs()
			n, start := 0, cpuTime()
			for b.Loop() {
				n++
				for _, m := range mix {
					data, err := c.enc(m)
					if err != nil {
						b.Fatal(err)
					}
					if err := c.dec(data, zeroOf(m)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
			b.ReportMetric(float64(wire), "wireB/page")
		})
	}
}
