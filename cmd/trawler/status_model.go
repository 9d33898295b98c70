package main

// The status report: what `trawler status` shows, as JSON (--json) and as
// the text of status_render.go.

import (
	"time"
)

// statusReport is the status of a crawl; its JSON is documented in
// docs/operations.md.
type statusReport struct {
	At     time.Time `json:"at"`
	Prefix string    `json:"prefix"`
	// Done: every queue empty, nothing in flight, and nothing moved between
	// two snapshots (crawlstate.Finished). Idle: the first two only.
	Done bool `json:"done"`
	Idle bool `json:"idle"`
	// Stalled says what a crawl that is not over and has stood still for
	// crawlstate.StallAfter waits for; set once per interval while it lasts.
	Stalled string `json:"stalled,omitempty"`

	Pages struct {
		Fetched uint64 `json:"fetched"` // pages published over the crawl's life (failures included); pages parsed in process are not published there, so the parsed documents' count or the live fetchers' when larger
		Parsed  uint64 `json:"parsed"`
	} `json:"pages"`
	Rates struct {
		PagesPerSec  float64 `json:"pages_per_s"`
		BytesPerSec  float64 `json:"bytes_per_s"`
		ParsedPerSec float64 `json:"parsed_per_s"`
	} `json:"rates"`
	Queued        uint64 `json:"queued"`         // URLs waiting anywhere before a fetch
	ParserBacklog uint64 `json:"parser_backlog"` // pages the parser has not acknowledged
	DeadLetters   uint64 `json:"dead_letters"`
	Frontier      struct {
		Source       string  `json:"source"` // redis or heartbeat (the run process's store)
		Queued       int64   `json:"queued"`
		InFlight     int64   `json:"in_flight"`
		Enqueued     uint64  `json:"enqueued"` // URLs ever queued: the size of the seen set
		Issued       uint64  `json:"issued"`
		ReadyHosts   float64 `json:"ready_hosts"`
		WaitingHosts float64 `json:"waiting_hosts"`
		// DroppedBudget and DroppedQueue are the URLs the store dropped
		// over the crawl's life: over a host's --max-pages-per-host, and
		// pushed out of a queue full at --max-queue-per-host.
		DroppedBudget uint64          `json:"dropped_host_budget"`
		DroppedQueue  uint64          `json:"dropped_host_queue"`
		TopHosts      []hostQueue     `json:"top_hosts,omitempty"`
		Partitions    map[string]bool `json:"-"`
	} `json:"frontier"`
	// Unreachable are the origins whose robots.txt is unreachable: being
	// retried (with the time left before they are given up) or given up.
	Unreachable []unreachableHost  `json:"robots_unreachable"`
	Statuses    map[string]float64 `json:"statuses"` // responses by class (2xx, 3xx, ...), live replicas' lifetimes
	Failures    map[string]float64 `json:"failures"` // fetches without a response, by kind
	// Excluded are the links the parsers did not follow for a limit, by
	// reason (trawler_parser_links_excluded_total{reason}).
	Excluded map[string]float64 `json:"excluded"`
	// NearDuplicates are the pages the parsers marked near_duplicate_of an
	// earlier page (--near-duplicates), and the links not followed on them.
	NearDuplicates struct {
		Pages float64 `json:"pages"`
		Links float64 `json:"links_not_followed"`
	} `json:"near_duplicates"`
	// Revisits is a continuous crawl's schedule (--revisit-min/max): URLs
	// scheduled for a revisit, due now (waiting to be queued) and within the
	// next hour, and the revisit fetches of live fetchers: per second, and
	// over their lifetimes with those that found the page unchanged and
	// the part of those answered 304.
	Revisits struct {
		Scheduled   int64   `json:"scheduled"`
		DueNow      int64   `json:"due_now"`
		DueHour     int64   `json:"due_next_hour"`
		PerSec      float64 `json:"per_s"`
		Fetched     float64 `json:"fetched"`
		Unchanged   float64 `json:"unchanged"`
		NotModified float64 `json:"not_modified"`
	} `json:"revisits"`
	// GivenUp is what live processes gave up without a response, over
	// their lifetimes: hosts (robots.txt unreachable, name not resolving),
	// URLs handed back over --max-deferrals, URLs lost over --max-attempts.
	GivenUp  givenUpReport    `json:"given_up"`
	Dedup    dedupReport      `json:"dedup"`
	Replicas map[string]int   `json:"replicas"` // live processes running each service
	Beats    []beatReport     `json:"processes"`
	Streams  []streamReport   `json:"streams"`
	Cons     []consumerReport `json:"consumers"`
}

// unreachableHost is an origin of the robots bucket's "u." records.
type unreachableHost struct {
	Origin   string  `json:"origin"`
	Error    string  `json:"error"`
	Failures int     `json:"failures"` // unreachable answers in a row
	Of       int     `json:"of"`       // answers in a row that give it up
	GaveUp   bool    `json:"gave_up"`
	GiveUpIn float64 `json:"give_up_in_s"` // seconds left, if every try fails; 0 when given up or due
}

type hostQueue struct {
	Host   string `json:"host"`
	Queued int    `json:"queued"`
}

// dedupReport has the dedup layers' hit rates (counters of live replicas).
type dedupReport struct {
	In           float64 `json:"urls_in"`
	New          float64 `json:"urls_new"`
	CacheHitRate float64 `json:"cache_hit_rate"` // of URLs in: found in the in-process cache
	BloomNewRate float64 `json:"bloom_new_rate"` // of cache misses: proved new by the Bloom filter
	SeenHitRate  float64 `json:"seen_hit_rate"`  // of seen-set lookups: already there
	SeenLookups  float64 `json:"seen_lookups"`
}

type beatReport struct {
	Service  string   `json:"service"`
	Services []string `json:"services"`
	Replica  string   `json:"replica"`
	AgeSec   float64  `json:"age_s"`
	Alive    bool     `json:"alive"`
}

type streamReport struct {
	Name      string  `json:"name"`
	Msgs      uint64  `json:"msgs"`
	Bytes     uint64  `json:"bytes"`
	LastSeq   uint64  `json:"last_seq"`
	OldestSec float64 `json:"oldest_age_s"` // age of the oldest message held; 0 when empty
}

type consumerReport struct {
	Stream      string  `json:"stream"`
	Name        string  `json:"name"`
	Pending     uint64  `json:"pending"`     // not yet delivered
	AckPending  int     `json:"ack_pending"` // delivered, not acknowledged
	Redelivered int     `json:"redelivered"`
	OldestSec   float64 `json:"oldest_age_s"` // age of the oldest message not acknowledged; 0 when none
}

// givenUpReport counts what was given up without a response.
type givenUpReport struct {
	Hosts    float64 `json:"hosts"`
	Deferred float64 `json:"urls_deferred_out"`
	Lost     float64 `json:"urls_lost"`
}
