package parser

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// A revisited page's changed goes into its parsed document as it came:
// false for an identical payload and for a 304, true for a change, and no
// key at all on a first visit (issue 21).
func TestParsedDocumentCarriesChanged(t *testing.T) {
	js, names := testbus.Start(t, 1)
	startParser(t, js, names)
	no, yes := false, true
	rec := &messages.Revisit{Visits: 2, Digest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Since: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
	body := []byte(`<title>T</title><a href="/x">x</a>`)
	publishPage(t, js, names, messages.Page{TaskID: "same", URL: "http://a.test/same", Changed: &no, Revisit: rec}, body)
	publishPage(t, js, names, messages.Page{TaskID: "304", URL: "http://a.test/304", Status: 304, ContentType: "text/html", Changed: &no, Revisit: rec}, nil)
	publishPage(t, js, names, messages.Page{TaskID: "new", URL: "http://a.test/new", Changed: &yes, Revisit: rec}, body)
	publishPage(t, js, names, messages.Page{TaskID: "first", URL: "http://a.test/first"}, body)
	docs := parsedRaw(t, js, names, 4)
	parserSettled(t, js, names)
	for id, want := range map[string]string{"same": "false", "304": "false", "new": "true", "first": ""} {
		raw, ok := docs[id]["changed"]
		switch {
		case want == "" && ok:
			t.Errorf("%s: a first visit's document has changed: %s", id, raw)
		case want != "" && string(raw) != want:
			t.Errorf("%s: changed %s, want %s", id, raw, want)
		}
	}
	if d := docs["same"]; string(d["title"]) != `"T"` || string(d["outlinks"]) != `["http://a.test/x"]` {
		t.Errorf("an unchanged page is parsed as any other: %v", d)
	}
	if d := docs["304"]; string(d["status"]) != "304" || string(d["outlinks"]) != "[]" {
		t.Errorf("304 document %v", d)
	}
}

// parsedRaw reads n documents from the parsed stream, by task ID, as the
// JSON objects published: which keys are there, not what a Go type makes of
// them.
func parsedRaw(t *testing.T, js jetstream.JetStream, names subjects.Names, n int) map[string]map[string]json.RawMessage {
	t.Helper()
	c, err := js.OrderedConsumer(context.Background(), names.StreamParsed(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]json.RawMessage{}
	for len(docs) < n {
		m, err := c.Next(jetstream.FetchMaxWait(20 * time.Second))
		if err != nil {
			t.Fatalf("%d parsed documents, want %d: %v", len(docs), n, err)
		}
		var d map[string]json.RawMessage
		if err := json.Unmarshal(m.Data(), &d); err != nil {
			t.Fatal(err)
		}
		var id string
		_ = json.Unmarshal(d["task_id"], &id)
		docs[id] = d
	}
	return docs
}
