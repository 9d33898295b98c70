package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// tap decodes what it shows through pkg/messages: a message that does not
// decode as its subject's kind is printed with the decoder's error, not
// dropped and not shown as if it were fine.
func TestTapDecodesThroughMessages(t *testing.T) {
	names, _ := subjects.New("")
	good, _ := messages.Encode(&messages.Parsed{URL: "https://a.test/", Status: 200, Outlinks: []string{}})
	meta, _ := messages.EncodePage(&messages.Page{URL: "https://a.test/", Status: 200})
	for _, c := range []struct {
		name   string
		m      tapped
		kind   string
		err    string // in the line's error field; "" for none
		data   bool   // the data is shown as JSON
		isText bool   // the data is shown as text
	}{
		{"parsed", tapped{Subject: names.PagesParsed(), Data: good}, messages.KindParsed, "", true, false},
		{"not json", tapped{Subject: names.PagesParsed(), Data: []byte("{not json")}, messages.KindParsed, "decode", false, true},
		{"v2", tapped{Subject: names.Discovered(3), Data: []byte(`{"v":2,"partition":3,"links":[]}`)}, messages.KindDiscovered, "version", true, false},
		{"page", tapped{Subject: names.PagesFetched(), Header: nats.Header{messages.HeaderPage: {string(meta)}}, Data: []byte("<html>")}, messages.KindPage, "", false, true},
		{"page without header", tapped{Subject: names.PagesFetched(), Data: []byte("<html>")}, messages.KindPage, "without Trawler-Page header", false, true},
		{"no kind", tapped{Subject: "elsewhere.x", Data: []byte("hello")}, "", "", false, true},
	} {
		var out bytes.Buffer
		c.m.Time = time.Unix(0, 0).UTC()
		if err := printTapped(&out, c.m, names.Kind(c.m.Subject), "json"); err != nil {
			t.Fatal(err)
		}
		var rec tapRecord
		if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, out.Bytes())
		}
		if rec.Kind != c.kind || (c.err == "") != (rec.Error == "") || !strings.Contains(rec.Error, c.err) ||
			(len(rec.Data) > 0) != c.data || (rec.DataText != "") != c.isText {
			t.Errorf("%s: line %s", c.name, out.Bytes())
		}
	}
}
