package parser

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/splitter"
)

// Keeping every message within the server's max_payload (issue 19): the
// link batches cut, the parsed document trimmed.

// payloadSlack is what a parser message keeps free of the server's
// max_payload for its headers (schema, message ID).
const payloadSlack = 1 << 10

// payloadLimit is the largest message data this parser may publish; 0 when
// unknown (then only a refusal tells).
func (s *Service) payloadLimit() int {
	if s.o.JS == nil || s.o.JS.Conn() == nil {
		return 0
	}
	return max(int(s.o.JS.Conn().MaxPayload())-payloadSlack, 0)
}

// split hands the links to the host splitter, one message per partition,
// cutting the links (the last first) until every message is within limit
// (a server whose max_payload is below what a page's links take; with the
// default 1 MiB, MaxLinkBytes keeps them well within it).
func (s *Service) split(doc *messages.Parsed, page messages.Page, via string, follow []messages.Link, limit int) ([]*nats.Msg, []string, []messages.Link) {
	all := len(follow)
	for {
		out, ids := splitter.Split(s.o.Names, s.o.PartitionCount, via, page.URL, "links:"+page.TaskID, follow)
		if limit <= 0 || fits(out, limit) {
			if len(follow) < all {
				doc.Truncated, doc.Queued = true, len(follow)
				doc.Error = joinError(doc.Error, fmt.Sprintf("%d of %d links queued: the rest were over the NATS payload limit (%d bytes)", len(follow), all, limit))
			}
			return out, ids, follow
		}
		follow = follow[:len(follow)*3/4]
	}
}

func fits(msgs []*nats.Msg, limit int) bool {
	for _, m := range msgs {
		if len(m.Data) > limit {
			return false
		}
	}
	return true
}

// fitDocument returns doc as JSON of at most limit bytes (limit 0: as it
// is). Over it, the document goes without its text, then its headings,
// then its last outlinks, and at last as a bare record; it is marked
// truncated and its Error says what was left out.
func fitDocument(doc *messages.Parsed, limit int) []byte {
	data, _ := messages.Encode(doc)
	if limit <= 0 || len(data) <= limit {
		return data
	}
	size := len(data)
	var left []string
	if doc.Text != "" {
		doc.Text = ""
		left = append(left, "text")
		data, _ = messages.Encode(doc)
	}
	if len(data) > limit && len(doc.Headings) > 0 {
		doc.Headings = nil
		left = append(left, "headings")
		data, _ = messages.Encode(doc)
	}
	if over := len(data) - limit + 512; over > 512 && len(doc.Outlinks) > 0 { // 512: room for the error
		n := len(doc.Outlinks)
		for n > 0 && over > 0 {
			n--
			b, _ := json.Marshal(doc.Outlinks[n])
			over -= len(b) + 1
		}
		left = append(left, fmt.Sprintf("%d of %d outlinks", len(doc.Outlinks)-n, len(doc.Outlinks)))
		doc.Outlinks = doc.Outlinks[:n]
	}
	doc.Truncated = true
	doc.Error = joinError(doc.Error, fmt.Sprintf("parsed document of %d bytes over the NATS payload limit (%d): %s left out", size, limit, strings.Join(left, ", ")))
	if data, _ = messages.Encode(doc); len(data) > limit {
		*doc = bareDocument(*doc, "")
		data, _ = messages.Encode(doc)
	}
	return data
}

// bareDocument is doc without its text, headings and outlinks, marked
// truncated, with why added to its error.
func bareDocument(doc messages.Parsed, why string) messages.Parsed {
	doc.Text, doc.Headings, doc.Outlinks, doc.Truncated = "", nil, []string{}, true
	doc.Error = joinError(doc.Error, why)
	return doc
}

// joinError appends why to a document's error.
func joinError(err, why string) string {
	switch {
	case why == "":
		return err
	case err == "":
		return why
	}
	return err + "; " + why
}
