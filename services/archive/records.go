package archive

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/warc"
)

// Records turns one fetched page into its WARC records, in the order they
// are written: request, response and metadata for a page that answered; a
// metadata record alone for a fetch that got no response (its error).
//
// Trawler carries a page's status, a selection of its headers and its body,
// not the bytes on the wire, so the HTTP heads are rebuilt from them: the
// status line, the kept headers (sorted), and a Content-Length that is the
// length of the body as archived. The body is archived as received after
// Content-Encoding was undone, so that header is dropped unless the fetcher
// kept the body encoded (Page.Encoding). The request is rebuilt from the URL
// and the user agent. A body cut at --max-body gets WARC-Truncated: length; a
// body not downloaded because of its type gets WARC-Truncated: unspecified.
//
// A page found unchanged on a revisit (Changed false) gets a revisit record
// in place of its response, as Heritrix writes it (request, revisit,
// metadata): see revisitOf.
func Records(p messages.Page, body []byte, userAgent string) ([]*warc.Record, error) {
	u, err := url.Parse(p.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("page URL %q: not an absolute URL", p.URL)
	}
	date := p.FetchedAt
	if date.IsZero() {
		date = time.Now()
	}
	meta := &warc.Record{
		Type: warc.TypeMetadata, ID: warc.NewID(), Date: date, TargetURI: p.URL, ContentType: warc.ContentTypeFields,
	}
	fields := metadataFields(p)
	if p.Status == 0 {
		block, err := warc.Fields(fields...)
		if err != nil {
			return nil, err
		}
		meta.Payload = block
		return []*warc.Record{meta}, nil
	}
	resp := &warc.Record{
		Type: warc.TypeResponse, ID: warc.NewID(), Date: date, TargetURI: p.URL,
		ContentType: warc.ContentTypeHTTPResponse, Head: responseHead(p, len(body)), Payload: body,
	}
	if profile, orig, ok := revisitOf(p, body); ok {
		// The new head, no payload, the original's payload digest.
		if resp, err = warc.NewRevisit(profile, p.URL, date, resp.Head, orig); err != nil {
			return nil, err
		}
		resp.ID = warc.NewID()
	}
	if p.IP != "" {
		resp.Fields = append(resp.Fields, warc.Field{Name: "WARC-IP-Address", Value: p.IP})
	}
	switch {
	case resp.Type == warc.TypeRevisit: // no payload of its own to be cut
	case p.Truncated:
		resp.Fields = append(resp.Fields, warc.Field{Name: "WARC-Truncated", Value: "length"})
	case p.Skipped != "":
		resp.Fields = append(resp.Fields, warc.Field{Name: "WARC-Truncated", Value: "unspecified"})
	}
	req := &warc.Record{
		Type: warc.TypeRequest, ID: warc.NewID(), Date: date, TargetURI: p.URL, ContentType: warc.ContentTypeHTTPRequest,
		Fields: []warc.Field{{Name: "WARC-Concurrent-To", Value: resp.ID}},
		Head:   requestHead(u, userAgent),
	}
	meta.Fields = []warc.Field{{Name: "WARC-Concurrent-To", Value: resp.ID}}
	if meta.Payload, err = warc.Fields(fields...); err != nil {
		return nil, err
	}
	return []*warc.Record{req, resp, meta}, nil
}

// revisitOf says whether p is archived as a revisit record, with which
// profile and referring to what: a page found unchanged on a revisit
// (Changed false) whose record names the content it found again
// (Revisit.Digest) and when that content was first fetched (Revisit.Since,
// the date of the response record that holds it). The profile is
// server-not-modified for a 304 (no body), identical-payload-digest when the
// body hashes to Revisit.Digest. Otherwise, and for a first visit or a
// changed page, the page gets a response record: its body is then the
// only copy the archive can be sure of.
func revisitOf(p messages.Page, body []byte) (profile string, orig warc.Original, ok bool) {
	r := p.Revisit
	if p.Changed == nil || *p.Changed || r == nil || r.Digest == "" || r.Since.IsZero() || p.Skipped != "" {
		return "", orig, false
	}
	orig = warc.Original{URI: p.URL, Date: r.Since, PayloadDigest: r.Digest}
	switch {
	case p.Status == http.StatusNotModified && len(body) == 0:
		return warc.ProfileServerNotModified, orig, true
	case p.Status != http.StatusNotModified && warc.Digest(body) == r.Digest:
		return warc.ProfileIdenticalPayload, orig, true
	}
	return "", orig, false
}

// metadataFields are what the crawl knows about a fetch beyond HTTP.
func metadataFields(p messages.Page) []warc.Field {
	f := []warc.Field{
		{Name: "trawler-task-id", Value: p.TaskID},
		{Name: "depth", Value: strconv.Itoa(p.Depth)},
		{Name: "fetchTimeMs", Value: strconv.FormatInt(p.Duration.Milliseconds(), 10)},
		{Name: "status", Value: strconv.Itoa(p.Status)},
		{Name: "body-size", Value: strconv.Itoa(p.BodySize)},
	}
	add := func(name, value string) {
		if value != "" {
			f = append(f, warc.Field{Name: name, Value: clean(value)})
		}
	}
	if p.Hops > 0 {
		add("redirect-hops", strconv.Itoa(p.Hops))
	}
	add("ip", p.IP)
	add("location", p.Location)
	add("error", p.Error)
	add("error-kind", p.ErrorKind)
	add("skipped", p.Skipped)
	add("content-encoding", p.Encoding)
	if p.Truncated {
		add("truncated", "true")
	}
	return f
}

func responseHead(p messages.Page, bodyLen int) []byte {
	var b strings.Builder
	text := http.StatusText(p.Status)
	if text == "" {
		text = "Status"
	}
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", p.Status, text)
	names := make([]string, 0, len(p.Headers))
	for name := range p.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		canon := http.CanonicalHeaderKey(name)
		switch {
		case canon == "Content-Length" || canon == "Transfer-Encoding":
			continue // replaced below: the archived body is whole and plain
		case canon == "Content-Encoding" && p.Encoding == "":
			continue // the fetcher decoded the body
		case !validHeaderName(name):
			continue
		}
		fmt.Fprintf(&b, "%s: %s\r\n", canon, clean(p.Headers[name]))
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", bodyLen)
	return []byte(b.String())
}

func requestHead(u *url.URL, userAgent string) []byte {
	target := u.RequestURI()
	return []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n\r\n", target, u.Host, clean(userAgent)))
}

// clean replaces control characters that would break a header line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= 0x20 || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}
