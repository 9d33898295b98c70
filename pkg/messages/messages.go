// Package messages defines the versioned wire format of every message Trawler
// publishes. It is a public contract (docs/subjects.md): downstream teams tap
// these subjects, so fields are only ever added, never renamed or repurposed.
//
// Internal work messages are JSON documents with a "v" field. Fetched pages are
// the exception: their data is the raw response body (readable as-is with the
// nats CLI) and their metadata is JSON in the Trawler-Page header.
package messages

import (
	"fmt"
	"time"
)

// Version is the schema version written into every message. Readers accept
// any message whose major version they know and ignore unknown fields.
const Version = 1

// Via tells how a URL was discovered.
const (
	ViaSeed     = "seed"
	ViaLink     = "link"
	ViaRedirect = "redirect"
	// ViaSitemap: listed in a sitemap, or a sitemap named by robots.txt or
	// by a sitemap index (--sitemaps).
	ViaSitemap = "sitemap"
)

// Link is one URL travelling through the pipeline with the crawl state that
// belongs to it.
type Link struct {
	URL   string `json:"url"`
	Depth int    `json:"depth"`
	// Hops counts consecutive redirects that led to this URL (0 for a link).
	Hops int `json:"hops,omitempty"`
	// Score is the link's priority for a best-first crawl (higher first), set
	// by the parser's topical scorer; 0 when the crawl is breadth-first.
	Score float64 `json:"score,omitempty"`
	// Sitemap says the URL is a sitemap file to read, not a page.
	Sitemap bool `json:"sitemap,omitempty"`
	// Revisit, in a continuous crawl, is the URL's record between visits;
	// on a link from a sitemap, its changefreq and lastmod hints.
	Revisit *Revisit `json:"revisit,omitempty"`
}

// Revisit is a URL's record between the visits of a continuous crawl
// (--revisit-min, --revisit-max): what the last visit found, sent back with
// the next task as a conditional GET, and the interval that led to the
// visit. The frontier keeps it with the URL's schedule entry; nothing else
// is stored per URL.
type Revisit struct {
	// Visits counts the URL's visits so far (0 before the first).
	Visits int `json:"visits,omitempty"`
	// Interval is the wait that led to the coming (on a task) or last (on a
	// done report) visit; 0 before the first.
	Interval time.Duration `json:"interval_ns,omitempty"`
	// ETag and LastModified are the last response's validators, sent as
	// If-None-Match and If-Modified-Since.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	// Digest is the WARC payload digest ("sha1:" and base32) of the last
	// body fetched; a body with the same digest is unchanged.
	Digest string `json:"digest,omitempty"`
	// Since is when the content with Digest was first fetched: the date of
	// the WARC response record a revisit record refers to.
	Since time.Time `json:"since,omitzero"`
	// ChangeFreq and Lastmod are a sitemap's hints for the URL (seed the
	// first interval; see pkg/revisit).
	ChangeFreq string    `json:"changefreq,omitempty"`
	Lastmod    time.Time `json:"lastmod,omitzero"`
}

// Discovered is published on <prefix>.discovered.<p>: the URLs of one source
// (a page, a redirect, a seed command) that fall in partition p. One message per
// (source, partition), never one per URL.
type Discovered struct {
	V         int    `json:"v"`
	Partition int    `json:"partition"`
	Via       string `json:"via"`
	Source    string `json:"source,omitempty"`
	Links     []Link `json:"links"`
}

// NewURLs is published on <prefix>.frontier.<p>.new by dedup: URLs never seen
// before, to be queued by the frontier.
type NewURLs struct {
	V         int    `json:"v"`
	Partition int    `json:"partition"`
	Links     []Link `json:"links"`
}

// FetchTask is published on <prefix>.fetch.<p> by the frontier: fetch one URL.
// A fetcher must not start a task after Deadline; the frontier re-issues the URL
// once the task's lease has run out.
type FetchTask struct {
	V         int       `json:"v"`
	ID        string    `json:"id"`
	Partition int       `json:"partition"`
	Host      string    `json:"host"`
	URL       string    `json:"url"`
	Depth     int       `json:"depth"`
	Hops      int       `json:"hops,omitempty"`
	Score     float64   `json:"score,omitempty"`
	Attempt   int       `json:"attempt"`
	IssuedAt  time.Time `json:"issued_at"`
	Deadline  time.Time `json:"deadline"`
	// NotBefore, when set, is the earliest start of the request: the end of
	// the host's politeness gap. The frontier issues a task up to
	// --issue-ahead early so that its trip to a fetcher overlaps the gap;
	// the fetcher holds it until then.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Sitemap: the URL is a sitemap file (Link.Sitemap); the fetcher takes
	// XML and gzip bodies for it and the parser reads it as a sitemap.
	Sitemap bool `json:"sitemap,omitempty"`
	// Revisit is set in a continuous crawl (empty on a first visit): the
	// fetcher sends its validators, digests the body and reports what it
	// found in the done report's Revisit and Changed.
	Revisit *Revisit `json:"revisit,omitempty"`
}

// FetchDone is published on <prefix>.frontier.<p>.done by the fetcher once a
// task is finished, whatever its outcome, so the frontier frees the host.
type FetchDone struct {
	V         int    `json:"v"`
	TaskID    string `json:"task_id"`
	Partition int    `json:"partition"`
	Host      string `json:"host"`
	URL       string `json:"url"`
	Status    int    `json:"status"`
	Error     string `json:"error,omitempty"`
	// ErrorKind classifies Error as the page's error_kind does (timeout,
	// dns, refused, …); empty when there is no error.
	ErrorKind string `json:"error_kind,omitempty"`
	// NoSuchHost is set when the host's name does not exist (NXDOMAIN, or
	// no address record): nothing was sent to the host, and its other URLs
	// will fail alike, so the frontier ends them without a rest between.
	NoSuchHost bool          `json:"no_such_host,omitempty"`
	Duration   time.Duration `json:"duration_ns"`
	IP         string        `json:"ip,omitempty"`
	// FinishedAt is when the fetcher finished with the host (response read,
	// or the attempt given up). The frontier counts the host's next gap from
	// this message's arrival, which is later and so the safer of the two.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Expired is set when the fetcher dropped the task because its deadline had
	// passed; the frontier issues the URL again.
	Expired bool `json:"expired,omitempty"`
	// Retry is set when the URL was not fetched and should be issued again
	// after RetryAfter (e.g. the task's slot went to fetching robots.txt, or
	// robots.txt was unreachable).
	Retry      bool          `json:"retry,omitempty"`
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
	// Disallowed is set when robots.txt forbids the URL: it was not fetched.
	Disallowed bool `json:"disallowed,omitempty"`
	// CrawlDelay is the host's robots.txt Crawl-delay for our user agent.
	CrawlDelay time.Duration `json:"crawl_delay_ns,omitempty"`
	// Revisit, for a task with one, is the URL's record after this visit
	// (the response's validators and digest); Changed says whether the
	// page changed since the last visit (false for a 304 or the same
	// digest; absent on a first visit and when nothing was fetched).
	Revisit *Revisit `json:"revisit,omitempty"`
	Changed *bool    `json:"changed,omitempty"`
}

// Page is the metadata of a fetched page, carried as JSON in the Trawler-Page
// header of a message on <prefix>.pages.fetched whose data is the raw body.
// Every final fetch outcome is published, errors included (Status 0, Error set),
// so a tap sees everything that was attempted.
type Page struct {
	V           int               `json:"v"`
	TaskID      string            `json:"task_id"`
	URL         string            `json:"url"`
	Host        string            `json:"host"`
	Partition   int               `json:"partition"`
	Depth       int               `json:"depth"`
	Hops        int               `json:"hops,omitempty"`
	Status      int               `json:"status"`
	ContentType string            `json:"content_type,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Location    string            `json:"location,omitempty"`
	Error       string            `json:"error,omitempty"`
	FetchedAt   time.Time         `json:"fetched_at"`
	Duration    time.Duration     `json:"duration_ns"`
	IP          string            `json:"ip,omitempty"`
	BodySize    int               `json:"body_size"`
	Truncated   bool              `json:"truncated,omitempty"`
	// ErrorKind classifies Error: timeout, dns, refused, reset, tls,
	// blocked, protocol, canceled, other, robots (the host's robots.txt
	// stayed unreachable and the host was given up), slow (the body came
	// slower than --min-transfer-rate) or deferred (handed back unfetched
	// more than --max-deferrals times; the frontier's record).
	ErrorKind string `json:"error_kind,omitempty"`
	// Skipped says why the body was not downloaded (a content type outside
	// the allow list); status and headers are real.
	Skipped string `json:"skipped,omitempty"`
	// Encoding is a Content-Encoding the body is still in (one the fetcher
	// cannot decode); empty when the body is plain.
	Encoding string `json:"encoding,omitempty"`
	// Sitemap: the page is a sitemap file (FetchTask.Sitemap).
	Sitemap bool `json:"sitemap,omitempty"`
	// Changed, on a revisit, says whether the page changed since the last
	// visit: false for a 304 Not Modified or a body with the same digest
	// (Revisit.Digest; Revisit.Since is when that content was first
	// fetched). Absent on a first visit.
	Changed *bool    `json:"changed,omitempty"`
	Revisit *Revisit `json:"revisit,omitempty"`
}

// Parsed is published on <prefix>.pages.parsed by the parser: what a page links
// to, for indexers, link graphs and the --out file.
type Parsed struct {
	V           int       `json:"v"`
	TaskID      string    `json:"task_id"`
	URL         string    `json:"url"`
	Status      int       `json:"status"`
	ContentType string    `json:"content_type,omitempty"`
	Depth       int       `json:"depth"`
	FetchedAt   time.Time `json:"fetched_at"`
	Error       string    `json:"error,omitempty"`
	Title       string    `json:"title,omitempty"`
	// Outlinks are the page's links, canonical, in document order, without
	// repeats, in scope or not (a redirect's target counts as its one outlink).
	Outlinks []string `json:"outlinks"`
	// Queued counts the outlinks handed on to dedup (in scope, within depth).
	Queued int `json:"queued"`
	// Text is the page's visible text (no script or style), whitespace
	// collapsed, capped at 64 KiB; Headings the text of its h1-h6.
	Text     string   `json:"text,omitempty"`
	Headings []string `json:"headings,omitempty"`
	// Lang is the document language (<html lang>, else Content-Language).
	Lang string `json:"lang,omitempty"`
	// Charset is the encoding the body was decoded from.
	Charset string `json:"charset,omitempty"`
	// Canonical is the page's rel=canonical URL, canonicalized.
	Canonical string `json:"canonical,omitempty"`
	// NoIndex and NoFollow are the page's robots directives (meta robots,
	// X-Robots-Tag); a nofollow page's outlinks are listed but not queued.
	NoIndex  bool `json:"noindex,omitempty"`
	NoFollow bool `json:"nofollow,omitempty"`
	// Relevance is the page's topical relevance A = 4*title + body cosine
	// similarity, in [0, 5], when the crawl has a topic (absent otherwise);
	// Relevant says it passed the crawl's threshold.
	Relevance *float64 `json:"relevance,omitempty"`
	Relevant  bool     `json:"relevant,omitempty"`
	// SimHash is the 64-bit fingerprint of the page's text (pkg/simhash), as
	// 16 lower-case hex digits, on HTML pages with text when the crawl
	// looks for near-duplicates; NearDuplicateOf is the URL of an earlier
	// page of the same host whose fingerprint is within the crawl's distance.
	SimHash         string `json:"simhash,omitempty"`
	NearDuplicateOf string `json:"near_duplicate_of,omitempty"`
	// Truncated says the parser cut the document: the page had more links
	// than a document keeps (10,000, 256 KiB of URLs), or the document was
	// over the NATS payload limit and went without its text or some of its
	// outlinks (Error says which).
	Truncated bool `json:"truncated,omitempty"`
	// Changed, on a revisit, says whether the page changed since the last
	// visit (Page.Changed): a tap keeping an index can skip false ones.
	// Absent on a first visit.
	Changed *bool `json:"changed,omitempty"`
}

// DeadLetter is published on <prefix>.dlq.<service> for a message that could
// not be processed; the original data travels verbatim.
type DeadLetter struct {
	V          int                 `json:"v"`
	Service    string              `json:"service"`
	Subject    string              `json:"subject"`
	Stream     string              `json:"stream,omitempty"`
	Sequence   uint64              `json:"sequence,omitempty"`
	Deliveries uint64              `json:"deliveries,omitempty"`
	Reason     string              `json:"reason"`
	At         time.Time           `json:"at"`
	Data       []byte              `json:"data"`
	Headers    map[string][]string `json:"headers,omitempty"`
}

// Header names used on the wire.
const (
	HeaderPage   = "Trawler-Page"   // JSON Page metadata on pages.fetched
	HeaderSchema = "Trawler-Schema" // "<kind>/v<version>", e.g. "page/v1"
	HeaderKind   = "Trawler-Kind"   // on frontier.<p>.*: "new" or "done"
	// HeaderNotBefore on a fetch task repeats FetchTask.NotBefore (Unix
	// nanoseconds), so a fetcher can hold the task without decoding it.
	HeaderNotBefore = "Trawler-Not-Before"
	// HeaderHoldFor on a fetch task published before its not-before time
	// is how long that was ahead when the frontier published it (decimal
	// nanoseconds, by the frontier's clock): a fetcher holds the task at
	// least this long from its arrival, so a fetcher whose clock runs ahead
	// of the frontier's never starts the request early.
	HeaderHoldFor = "Trawler-Hold-For"
)

// Schema returns the value of the Trawler-Schema header for a message kind.
func Schema(kind string) string { return fmt.Sprintf("%s/v%d", kind, Version) }

func (m *Discovered) version() *int { return &m.V }
func (m *NewURLs) version() *int    { return &m.V }
func (m *FetchTask) version() *int  { return &m.V }
func (m *FetchDone) version() *int  { return &m.V }
func (m *Page) version() *int       { return &m.V }
func (m *Parsed) version() *int     { return &m.V }
func (m *DeadLetter) version() *int { return &m.V }

// DecodePage reads the Trawler-Page header of a pages.fetched message.
func DecodePage(header string) (Page, error) {
	var p Page
	if header == "" {
		return p, fmt.Errorf("page message without %s header", HeaderPage)
	}
	err := Decode([]byte(header), &p)
	return p, err
}
