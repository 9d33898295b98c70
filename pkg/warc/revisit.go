package warc

// Revisit records (WARC 1.1 section 6.7): a page fetched again and found
// unchanged is recorded without its payload, referring to the record that
// holds it, as Heritrix does for a continuous crawl.

import (
	"fmt"
	"time"
)

// The revisit profiles of WARC 1.1 (section 6.7.2 and 6.7.3).
const (
	// ProfileIdenticalPayload: the payload was fetched again and its digest
	// equals the earlier record's.
	ProfileIdenticalPayload = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	// ProfileServerNotModified: the server answered a conditional request
	// with 304 Not Modified.
	ProfileServerNotModified = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
)

// Original is the earlier record a revisit refers to.
type Original struct {
	URI           string    // its WARC-Target-URI
	Date          time.Time // its WARC-Date
	ID            string    // its WARC-Record-ID, "" when unknown
	PayloadDigest string    // its WARC-Payload-Digest (required by the identical-payload profile)
}

// NewRevisit returns the revisit record of targetURI fetched at date and
// found unchanged under profile, referring to orig. head is the new HTTP
// response's start line and header fields (with the final empty line): a
// revisit keeps the headers, which may have changed, and drops the
// payload. It refuses a profile it does not know and an identical-payload
// revisit without the original's digest.
func NewRevisit(profile, targetURI string, date time.Time, head []byte, orig Original) (*Record, error) {
	switch profile {
	case ProfileIdenticalPayload:
		if orig.PayloadDigest == "" {
			return nil, fmt.Errorf("%w: an identical-payload revisit of %q needs the original's payload digest", ErrInvalid, targetURI)
		}
	case ProfileServerNotModified:
	default:
		return nil, fmt.Errorf("%w: unknown revisit profile %q", ErrInvalid, profile)
	}
	if orig.URI == "" || orig.Date.IsZero() {
		return nil, fmt.Errorf("%w: a revisit of %q must name the original's URI and date", ErrInvalid, targetURI)
	}
	fields := []Field{
		{"WARC-Profile", profile},
		{"WARC-Refers-To-Target-URI", orig.URI},
		{"WARC-Refers-To-Date", FormatDate(orig.Date)},
	}
	if orig.ID != "" {
		fields = append(fields, Field{"WARC-Refers-To", orig.ID})
	}
	return &Record{
		Type: TypeRevisit, Date: date, TargetURI: targetURI, ContentType: ContentTypeHTTPResponse,
		Fields: fields, Head: head, PayloadDigest: orig.PayloadDigest,
	}, nil
}
