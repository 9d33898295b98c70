// Package codecbench measures candidate wire codecs for Trawler's bus
// messages over the message mix a crawl sends per page (issue 17). It is a
// module of its own so that the candidates that lost stay out of Trawler's
// go.mod; pkg/messages/codec_bench_test.go keeps the same mix for the codec
// that won. Run: go test -run '^$' -bench . -benchmem -count 10 (and with
// GOEXPERIMENT=jsonv2 for encoding/json/v2); compare cpu-ns/op on a shared
// machine. The figures and the decision are in docs/subjects.md, "Wire format".
//
// pb/messages.pb.go is generated from pb/messages.proto without protoc:
//
//	go install github.com/bufbuild/buf/cmd/buf@v1.75.0
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	buf generate   # in this directory, per buf.gen.yaml
package codecbench

import (
	"fmt"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// Mix is what one crawled page puts on the bus: each message is encoded once
// and decoded once (a tap decodes pages.parsed and the Trawler-Page header
// once more; not counted). Keep it in step with pkg/messages/codec_bench_test.go:
// TestMixSize pins its encoding/json size.
type Mix struct {
	Task       messages.FetchTask  // frontier -> fetcher
	Page       messages.Page       // fetcher -> parser (Trawler-Page header)
	Done       messages.FetchDone  // fetcher -> frontier
	Discovered messages.Discovered // parser -> dedup: one partition's 40 links
	New        messages.NewURLs    // dedup -> frontier: the same 40, all new
	Parsed     messages.Parsed     // parser -> taps: 40 outlinks, no text
}

// url returns the i-th of a page's links: about 60 bytes, as crawled URLs are.
func url(i int) string {
	return fmt.Sprintf("https://www.example-news.org/world/2026/11/story-%04d-on-page.html", 4000+i)
}

// NewMix builds the mix with the values a real crawl carries.
func NewMix() Mix {
	at := time.Date(2026, 11, 22, 1, 0, 0, 123456789, time.UTC)
	const id = "Zb3kq9xT1mWQe8rLpV0c2N"
	const host = "www.example-news.org"
	const pageURL = "https://www.example-news.org/world/2026/11/story-3999-on-page.html"
	links := make([]messages.Link, 40)
	outlinks := make([]string, 40)
	for i := range links {
		links[i] = messages.Link{URL: url(i), Depth: 3}
		outlinks[i] = url(i)
	}
	return Mix{
		Task: messages.FetchTask{V: 1, ID: id, Partition: 17, Host: host, URL: pageURL, Depth: 2, Attempt: 1,
			IssuedAt: at, Deadline: at.Add(10 * time.Minute)},
		Page: messages.Page{V: 1, TaskID: id, URL: pageURL, Host: host, Partition: 17, Depth: 2, Status: 200,
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
		Done: messages.FetchDone{V: 1, TaskID: id, Partition: 17, Host: host, URL: pageURL, Status: 200,
			Duration: 81234567 * time.Nanosecond, IP: "93.184.215.14", FinishedAt: at.Add(81 * time.Millisecond)},
		Discovered: messages.Discovered{V: 1, Partition: 17, Via: messages.ViaLink, Source: pageURL, Links: links},
		New:        messages.NewURLs{V: 1, Partition: 17, Links: links},
		Parsed: messages.Parsed{V: 1, TaskID: id, URL: pageURL, Status: 200, ContentType: "text/html; charset=utf-8",
			Depth: 2, FetchedAt: at.Add(81 * time.Millisecond), Title: "Story 3999: what the page is about, in a headline",
			Outlinks: outlinks, Queued: 40, Lang: "en", Charset: "utf-8", Canonical: pageURL},
	}
}

// Values returns the mix's messages (pointers), for codecs that take any.
func (m *Mix) Values() []any {
	return []any{&m.Task, &m.Page, &m.Done, &m.Discovered, &m.New, &m.Parsed}
}

// Fresh returns a new zero value for each of Values, to decode into.
func Fresh() []any {
	return []any{new(messages.FetchTask), new(messages.Page), new(messages.FetchDone),
		new(messages.Discovered), new(messages.NewURLs), new(messages.Parsed)}
}
