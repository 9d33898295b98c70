package fetcher

// The page message: a fetch's page (or the record of a URL not fetched),
// and the NATS message a tap reads, its metadata bounded.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// record is the page message of a URL that was not fetched, and why.
func (s *Service) record(task messages.FetchTask, why string) messages.Page {
	return messages.Page{
		TaskID: task.ID, URL: task.URL, Host: task.Host, Partition: task.Partition,
		Depth: task.Depth, Hops: task.Hops, Error: errorText(why), FetchedAt: time.Now().UTC(),
	}
}

func (s *Service) page(task messages.FetchTask, r Response) messages.Page {
	p := messages.Page{
		TaskID: task.ID, URL: task.URL, Host: task.Host, Partition: task.Partition,
		Depth: task.Depth, Hops: task.Hops, Status: r.Status, ContentType: r.ContentType, Headers: r.Headers,
		Location: r.Location, FetchedAt: time.Now().UTC(), Duration: r.Duration, IP: r.IP,
		BodySize: len(r.Body), Truncated: r.Truncated, Skipped: r.Skipped, Encoding: r.Encoding, Sitemap: task.Sitemap,
	}
	if r.Err != nil {
		p.Error, p.ErrorKind = errorText(r.Err.Error()), r.ErrKind
		s.failed(task.Host, r.ErrKind, p.Error)
	} else {
		s.Stats.Fetched.Add(1)
		if r.Truncated && r.Skipped == "" {
			s.Stats.Truncated.Add(1)
		}
		if s.statuses != nil {
			class := fmt.Sprintf("%dxx", r.Status/100)
			s.statuses.WithLabelValues(class).Inc()
			s.perHost.add(task.Host, class, "")
		}
	}
	s.Stats.Bytes.Add(int64(len(r.Body)))
	return p
}

// maxPageHeader bounds a page message's headers (the Trawler-Page JSON, the
// URL and Content-Type repeated): well within headerRoom and JetStream's
// bus.MaxHeaderBytes, whatever the response sent. The fetcher's own bounds
// (URL and Location within --max-url-length, header values and the error
// within 1 KiB) keep a page under it but for JSON escaping of hostile
// bytes; past it the metadata goes without the response's headers.
const maxPageHeader = 48 << 10

// pageMsg builds the message a tap reads: the raw body as data, the metadata as
// JSON in a header, and a few plain headers for quick filtering. Metadata
// over maxPageHeader is recorded without the response's headers, content
// type and redirect target, with the reason in Error.
func pageMsg(names subjects.Names, p messages.Page, body []byte) *nats.Msg {
	meta := pageMeta(p)
	if n := len(meta) + len(p.URL) + len(p.ContentType); n > maxPageHeader {
		p = bareRecord(p, fmt.Sprintf("page metadata of %d bytes over the %d-byte header bound: response headers left out", n, maxPageHeader))
		meta = pageMeta(p)
	}
	m := nats.NewMsg(names.PagesFetched())
	m.Data = body
	m.Header.Set(messages.HeaderSchema, messages.Schema("page"))
	m.Header.Set(messages.HeaderPage, string(meta))
	m.Header.Set("Trawler-URL", p.URL)
	m.Header.Set("Trawler-Status", strconv.Itoa(p.Status))
	if p.ContentType != "" {
		m.Header.Set("Content-Type", p.ContentType)
	}
	return m
}

// pageMeta is p as the Trawler-Page header carries it: JSON without HTML
// escaping (the same JSON to a reader), so that a URL's "&" takes one byte
// of the header, not six.
func pageMeta(p messages.Page) []byte {
	data, _ := messages.EncodePage(&p)
	return data
}

// bareRecord is p without what a response may make large (its headers,
// content type and redirect target), with why added to its error: a record
// of the fetch that always fits a message.
func bareRecord(p messages.Page, why string) messages.Page {
	p.Headers, p.ContentType, p.Location = nil, "", ""
	if p.Error != "" {
		why = p.Error + "; " + why
	}
	p.Error = why
	if p.ErrorKind == "" {
		p.ErrorKind = KindProtocol
	}
	return p
}
