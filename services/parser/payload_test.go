package parser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// startParser runs a parser (scope a.test, --max-url-length 256, text on)
// against js, with the changes set makes to its options.
func startParser(t *testing.T, js jetstream.JetStream, names subjects.Names, set ...func(*Options)) *Service {
	t.Helper()
	o := Options{
		JS: js, Names: names, Scope: hostScope{"a.test": true}, PartitionCount: 1, Workers: 2,
		MaxDepth: -1, MaxRedirects: 5, MaxURLLength: 256, MaxDeliver: 10, Text: true,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range set {
		f(&o)
	}
	svc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return svc
}

// publishPage publishes a fetched page as the fetcher does.
func publishPage(t *testing.T, js jetstream.JetStream, names subjects.Names, p messages.Page, body []byte) {
	t.Helper()
	p.V, p.Status, p.BodySize = 1, max(p.Status, 200), len(body)
	if p.ContentType == "" && p.Location == "" {
		p.ContentType = "text/html"
	}
	meta, _ := json.Marshal(p)
	testbus.Publish(t, js, names.PagesFetched(), body, messages.HeaderPage, string(meta))
}

// parsedDocs reads n documents from the parsed stream, by task ID, with
// their size.
func parsedDocs(t *testing.T, js jetstream.JetStream, names subjects.Names, n int) (map[string]messages.Parsed, map[string]int) {
	t.Helper()
	ctx := context.Background()
	c, err := js.OrderedConsumer(ctx, names.StreamParsed(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	docs, sizes := map[string]messages.Parsed{}, map[string]int{}
	for len(docs) < n {
		m, err := c.Next(jetstream.FetchMaxWait(20 * time.Second))
		if err != nil {
			t.Fatalf("%d parsed documents, want %d: %v", len(docs), n, err)
		}
		var d messages.Parsed
		if err := messages.Decode(m.Data(), &d); err != nil {
			t.Fatal(err)
		}
		docs[d.TaskID], sizes[d.TaskID] = d, len(m.Data())
	}
	return docs, sizes
}

// parserSettled waits until every page is acked, and checks none was
// redelivered or dead-lettered.
func parserSettled(t *testing.T, js jetstream.JetStream, names subjects.Names) {
	t.Helper()
	testbus.Settled(t, js, names, names.StreamPages(), names.ConsumerParser())
}

// discoveredLinks drains the links handed to dedup, and checks each
// message is within limit bytes.
func discoveredLinks(t *testing.T, js jetstream.JetStream, names subjects.Names, limit int) int {
	t.Helper()
	n := 0
	for {
		m := testbus.Next(t, js, names.StreamDiscovered(), names.ConsumerDedup(0), time.Second)
		if m == nil {
			return n
		}
		if len(m.Data()) > limit {
			t.Errorf("a links message of %d bytes, over %d", len(m.Data()), limit)
		}
		var d messages.Discovered
		if err := messages.Decode(m.Data(), &d); err != nil {
			t.Fatal(err)
		}
		n += len(d.Links)
	}
}

// Issue 19 #2 end to end: the 16 KB <base> with 10,000 relative links and
// a redirect over --max-url-length each get their record, with every
// outlink within the URL length limit and the links' bytes capped; nothing
// is retried or dead-lettered.
func TestHostilePagesRecordedOnce(t *testing.T) {
	js, names := testbus.StartMaxPayload(t, 1, 1<<20) // an external server's default
	svc := startParser(t, js, names)
	publishPage(t, js, names, messages.Page{TaskID: "base", URL: "http://a.test/dir/page.html"}, hostileBasePage())
	publishPage(t, js, names, messages.Page{TaskID: "redirect", URL: "http://a.test/old", Status: 301, Location: "http://a.test/" + strings.Repeat("n", 300)}, nil)
	docs, sizes := parsedDocs(t, js, names, 2)
	parserSettled(t, js, names)

	base := docs["base"]
	bytes := 0
	for _, l := range base.Outlinks {
		if len(l) > 256 || !strings.HasPrefix(l, "http://a.test/dir/p") {
			t.Fatalf("outlink %q", l)
		}
		bytes += len(l)
	}
	if len(base.Outlinks) == 0 || bytes > MaxLinkBytes || base.Queued != len(base.Outlinks) || sizes["base"] > 1<<20 {
		t.Errorf("base page: %d outlinks of %d bytes, %d queued, document of %d bytes", len(base.Outlinks), bytes, base.Queued, sizes["base"])
	}
	if n := discoveredLinks(t, js, names, 1<<20); n != base.Queued {
		t.Errorf("%d links handed to dedup, document says %d", n, base.Queued)
	}
	if r := docs["redirect"]; len(r.Outlinks) != 0 || r.Queued != 0 || !strings.Contains(r.Error, "over --max-url-length") {
		t.Errorf("redirect over the URL length limit: %+v", r)
	}
	if svc.Stats.Filtered.Load() == 0 {
		t.Error("links over the URL length limit not counted")
	}
	t.Logf("base page: %d outlinks, %d bytes of them, document of %d bytes", len(base.Outlinks), bytes, sizes["base"])
}

// A document over the server's max_payload (64 KiB here: the text alone
// takes that) is recorded without its text and with the outlinks that fit,
// marked truncated, with the reason; the links handed to dedup are cut to
// fit too. It is never retried.
func TestParsedDocumentFitsMaxPayload(t *testing.T) {
	const maxPayload = 64 << 10
	js, names := testbus.StartMaxPayload(t, 1, maxPayload)
	startParser(t, js, names)
	// The page itself fits (the fetcher published it): 40 KB of text and
	// 400 short relative links, each resolving against a 200-byte
	// directory, make a document of ~130 KB.
	const nLinks = 400
	var b strings.Builder
	b.WriteString("<title>Big</title><h1>Heading</h1><p>" + strings.Repeat("word ", 8000) + "</p>")
	for i := range nLinks {
		fmt.Fprintf(&b, `<a href=%d>x</a>`, i)
	}
	if b.Len() > maxPayload-2048 {
		t.Fatalf("page of %d bytes does not fit the test server", b.Len())
	}
	dir := "http://a.test/" + strings.Repeat("d", 200) + "/"
	publishPage(t, js, names, messages.Page{TaskID: "big", URL: dir + "index.html"}, []byte(b.String()))
	docs, sizes := parsedDocs(t, js, names, 1)
	parserSettled(t, js, names)
	d := docs["big"]
	if sizes["big"] > maxPayload || !d.Truncated || d.Text != "" || d.Title != "Big" || len(d.Outlinks) == 0 || len(d.Outlinks) >= nLinks ||
		!strings.Contains(d.Error, "over the NATS payload limit") || !strings.Contains(d.Error, "text") || !strings.Contains(d.Error, "outlinks") {
		d.Outlinks = d.Outlinks[:min(len(d.Outlinks), 2)]
		t.Errorf("document of %d bytes: %+v", sizes["big"], d)
	}
	if n := discoveredLinks(t, js, names, maxPayload); n != d.Queued || n == 0 || n >= nLinks {
		t.Errorf("%d links handed to dedup, document says %d", n, d.Queued)
	}
	t.Logf("document of %d bytes, %d outlinks, %d queued: %s", sizes["big"], len(d.Outlinks), d.Queued, d.Error)
}

// A document the server refuses for its size all the same (here the
// parsed stream's max message size) is recorded bare, with the reason,
// once.
func TestParsedDocumentRefusedIsRecordedBare(t *testing.T) {
	js, names := testbus.StartMaxPayload(t, 1, 1<<20)
	ctx := context.Background()
	s, err := js.Stream(ctx, names.StreamParsed())
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = 2048
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	startParser(t, js, names)
	unchanged := false // a revisit's changed survives the cut
	publishPage(t, js, names, messages.Page{TaskID: "t", URL: "http://a.test/", Changed: &unchanged}, []byte("<title>T</title><p>"+strings.Repeat("text ", 2000)+`</p><a href="/x">x</a>`))
	docs, _ := parsedDocs(t, js, names, 1)
	parserSettled(t, js, names)
	if d := docs["t"]; !d.Truncated || d.Text != "" || len(d.Outlinks) != 0 || d.Title != "T" || !strings.Contains(d.Error, "refused for its size") ||
		d.Changed == nil || *d.Changed {
		t.Errorf("document %+v", d)
	}
}
