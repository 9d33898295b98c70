package fetcher

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/robots"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// robotsFailuresBeforeGivingUp is how many consecutive 5xx or network
// failures of a host's robots.txt, --robots-retry apart, make the crawl give
// up on the host: its URLs are then reported disallowed rather than retried
// forever (RFC 9309 2.3.1.4 leaves the long-term choice to the crawler).
const robotsFailuresBeforeGivingUp = 3

// robotsRecord is what the crawl remembers of one origin's robots.txt, in a
// JetStream key-value bucket that every fetcher replica shares: robots.txt is
// fetched once per origin for the whole crawl, not once per replica.
type robotsRecord struct {
	Status    int       `json:"status"` // 0: network error
	Error     string    `json:"error,omitempty"`
	Body      []byte    `json:"body,omitempty"`
	FetchedAt time.Time `json:"fetched_at"`
	Failures  int       `json:"failures,omitempty"` // consecutive unreachable answers
	// Blocked says the address guard refused the origin (Error says why).
	// Such a record is this fetcher's setting, not the origin's answer: it
	// is kept in process only, never in the shared bucket, so that a replica
	// or a later run with --allow-private decides for itself.
	Blocked bool `json:"blocked,omitempty"`
}

// robotsVerdict is how a task's URL stands with its origin's robots.txt.
type robotsVerdict struct {
	Allowed    bool
	CrawlDelay time.Duration
	// Fetched is set when robots.txt was fetched for this task: the host's
	// politeness gap is owed before the page itself.
	Fetched    bool
	Duration   time.Duration // of that fetch
	RetryAfter time.Duration // robots.txt unreachable: leave the host alone this long
	Reason     string        // why the URL is not allowed, for the page record
	GaveUp     bool          // robots.txt stayed unreachable: the host is given up
	// Blocked: the address guard refuses the host; Reason is the refusal
	// (class and flag). Final at once, like GaveUp, never retried.
	Blocked bool
	// Sitemaps are the file's Sitemap: lines, when it was fetched for this
	// task: announced once per fetch of robots.txt, whichever replica.
	Sitemaps []string
}

type robotsEntry struct {
	rules   *robots.Robots
	rec     robotsRecord
	expires time.Time
}

// robotsCache keeps parsed rules per origin in process, backed by the bucket.
type robotsCache struct {
	kv     jetstream.KeyValue
	client *HTTPClient
	// get fetches a robots.txt URL; client.Fetch unless the service wraps
	// it (the per-IP gate).
	get       func(ctx context.Context, rawURL string) Response
	userAgent string
	ttl       time.Duration
	retry     time.Duration
	now       func() time.Time // nil: time.Now

	mu    sync.Mutex
	local map[string]robotsEntry // guarded by mu; bounded by maxLocal

	// This replica's view of the hosts whose robots.txt is unreachable,
	// for its progress line and metrics; the crawl-wide list is the
	// bucket's "u." records (UnreachableRecord).
	retrying       sync.Map     // origin -> time it will be given up
	retryingN      atomic.Int64 // entries of retrying
	givenUp, tries atomic.Int64 // origins given up; unreachable answers
	// lastUnreachable is the latest unreachable answer of an origin then
	// retried: a stall line names it, so that a wrong --dns-servers or a
	// proxy that refuses says so before the origin is given up.
	lastUnreachable atomic.Pointer[unreachableNote]
}

// unreachableNote is an origin's last unreachable robots.txt answer.
type unreachableNote struct{ origin, err string }

// UnreachablePrefix starts the keys of the robots bucket that list the
// origins whose robots.txt is unreachable: a small set `trawler status`
// reads without listing every origin of the crawl.
const UnreachablePrefix = "u."

// UnreachableRecord is the value of an UnreachablePrefix key: an origin
// whose robots.txt answered 5xx, 429 or not at all, how often in a row, and
// when it will be given up if it stays so (GaveUp once it is: its URLs then
// end as failed, kind robots). The key is deleted when the origin answers.
type UnreachableRecord struct {
	Origin   string    `json:"origin"`
	Error    string    `json:"error"`
	Failures int       `json:"failures"` // unreachable answers in a row
	Of       int       `json:"of"`       // answers in a row that give the host up
	LastTry  time.Time `json:"last_try"`
	NextTry  time.Time `json:"next_try,omitzero"`   // earliest next fetch of robots.txt
	GiveUpAt time.Time `json:"give_up_at,omitzero"` // if every try fails, promptly retried
	GaveUp   bool      `json:"gave_up,omitempty"`
}

const maxLocal = 10000

// clock returns the time the cache decides by: c.now, or time.Now.
func (c *robotsCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// RobotsBucketConfig is the robots.txt bucket's configuration (ttl:
// --robots-ttl), for the fetcher and for a caller that creates the bucket
// ahead of it (trawler run, at its start).
func RobotsBucketConfig(names subjects.Names, ttl time.Duration) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: names.RobotsBucket(), Description: "robots.txt answers per origin", TTL: ttl, Storage: jetstream.FileStorage,
	}
}

func openRobots(ctx context.Context, js jetstream.JetStream, names subjects.Names, client *HTTPClient, ua string, ttl, retry time.Duration) (*robotsCache, error) {
	kv, err := bus.KeyValue(ctx, js, RobotsBucketConfig(names, ttl))
	if err != nil {
		return nil, fmt.Errorf("robots bucket %s: %w", names.RobotsBucket(), err)
	}
	// Groups are matched on the product token ("Trawler"), not the whole
	// User-Agent header.
	return &robotsCache{kv: kv, client: client, userAgent: robots.ProductToken(ua), ttl: ttl, retry: retry, local: map[string]robotsEntry{}}, nil
}

// check decides on rawURL. An error means the bucket could not be read or
// written; the caller retries the task later.
func (c *robotsCache) check(ctx context.Context, rawURL string) (robotsVerdict, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return robotsVerdict{}, err
	}
	origin := u.Scheme + "://" + u.Host
	start, now := time.Now(), c.clock()
	e, fetched, err := c.entry(ctx, origin, now)
	if err != nil {
		return robotsVerdict{}, err
	}
	v := robotsVerdict{Fetched: fetched}
	if fetched {
		v.Duration = time.Since(start)
	}
	if unreachable(e.rec.Status) {
		if e.rec.Blocked {
			v.GaveUp, v.Blocked, v.Reason = true, true, e.rec.Error
			return v, nil
		}
		if e.rec.Failures >= robotsFailuresBeforeGivingUp {
			v.GaveUp = true
			v.Reason = fmt.Sprintf("robots.txt unreachable (%s); not fetching this host", lastError(e.rec))
			return v, nil
		}
		// From the time of this answer, not of the check's start: a robots.txt
		// that never answered took its timeout, and the host rested that
		// much longer than --robots-retry between tries (40 s for 30).
		v.RetryAfter = max(e.rec.FetchedAt.Add(c.retry).Sub(c.clock()), time.Second)
		v.Reason = fmt.Sprintf("robots.txt unreachable (%s), %d of %d tries", lastError(e.rec), e.rec.Failures, robotsFailuresBeforeGivingUp)
		return v, nil
	}
	v.Allowed = e.rules.Allowed(c.userAgent, rawURL)
	if !v.Allowed {
		v.Reason = "disallowed by robots.txt"
	}
	v.CrawlDelay, _ = e.rules.CrawlDelay(c.userAgent)
	if fetched && e.rules != nil {
		v.Sitemaps = e.rules.Sitemaps()
	}
	return v, nil
}

func unreachable(status int) bool { return status == 0 || status == 429 || status >= 500 }

// entry returns the origin's rules from memory, the bucket, or the origin.
func (c *robotsCache) entry(ctx context.Context, origin string, now time.Time) (robotsEntry, bool, error) {
	c.mu.Lock()
	e, ok := c.local[origin]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e, false, nil
	}
	key := "o." + hex.EncodeToString([]byte(origin))
	var prev *robotsRecord
	kve, err := c.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return e, false, fmt.Errorf("robots bucket: %w", err)
	default:
		var rec robotsRecord
		if json.Unmarshal(kve.Value(), &rec) == nil {
			if fresh := c.remember(origin, rec, now); fresh != nil {
				return *fresh, false, nil
			}
			prev = &rec
		}
	}
	rec := c.fetch(ctx, origin)
	if rec.Blocked {
		return *c.remember(origin, rec, now), true, nil // not in the bucket (see Blocked)
	}
	switch {
	case !unreachable(rec.Status) || rec.Failures > 0: // answered, or given up already
	case prev != nil && unreachable(prev.Status):
		rec.Failures = prev.Failures + 1
	default:
		rec.Failures = 1
	}
	data, _ := json.Marshal(rec)
	if _, err := c.kv.Put(ctx, key, data); err != nil {
		return e, false, fmt.Errorf("robots bucket: %w", err)
	}
	c.noteReachability(ctx, origin, rec, prev != nil && unreachable(prev.Status))
	return *c.remember(origin, rec, now), true, nil
}

// noteReachability keeps the origin's UnreachablePrefix record (and this
// replica's counts) in step with rec, a robots.txt answer just written.
// Best effort: the record is for people watching, not for the crawl.
func (c *robotsCache) noteReachability(ctx context.Context, origin string, rec robotsRecord, wasUnreachable bool) {
	key := UnreachablePrefix + hex.EncodeToString([]byte(origin))
	if !unreachable(rec.Status) {
		if _, ok := c.retrying.LoadAndDelete(origin); ok {
			c.retryingN.Add(-1)
		}
		if wasUnreachable {
			_ = c.kv.Delete(ctx, key)
		}
		return
	}
	c.tries.Add(1)
	u := UnreachableRecord{Origin: origin, Error: lastError(rec), Failures: rec.Failures, Of: robotsFailuresBeforeGivingUp,
		LastTry: rec.FetchedAt, GaveUp: rec.Failures >= robotsFailuresBeforeGivingUp}
	if u.GaveUp {
		if _, ok := c.retrying.LoadAndDelete(origin); ok {
			c.retryingN.Add(-1)
		}
		c.givenUp.Add(1)
	} else {
		u.NextTry = rec.FetchedAt.Add(c.retry)
		u.GiveUpAt = rec.FetchedAt.Add(time.Duration(robotsFailuresBeforeGivingUp-rec.Failures) * c.retry)
		if _, loaded := c.retrying.Swap(origin, u.GiveUpAt); !loaded {
			c.retryingN.Add(1)
		}
		c.lastUnreachable.Store(&unreachableNote{origin: origin, err: u.Error})
	}
	data, _ := json.Marshal(u)
	_, _ = c.kv.Put(ctx, key, data)
}

// RobotsUnreachable is this replica's count of origins whose robots.txt is
// being retried, the latest time one of them will be given up, and the
// origins given up so far. Last is the latest unreachable answer of one
// still retried ("origin: error"; empty when none is).
type RobotsUnreachable struct {
	Retrying   int
	LastGiveUp time.Time
	GivenUp    int64
	Last       string
}

func (c *robotsCache) unreachableNow() RobotsUnreachable {
	var r RobotsUnreachable
	if c == nil {
		return r
	}
	stale := c.clock().Add(-c.retry) // nobody tried since: no URL of the host came
	c.retrying.Range(func(k, v any) bool {
		if v.(time.Time).Before(stale) {
			if _, ok := c.retrying.LoadAndDelete(k); ok {
				c.retryingN.Add(-1)
			}
			return true
		}
		r.Retrying++
		if t := v.(time.Time); t.After(r.LastGiveUp) {
			r.LastGiveUp = t
		}
		return true
	})
	r.GivenUp = c.givenUp.Load()
	if n := c.lastUnreachable.Load(); n != nil && r.Retrying > 0 {
		if _, ok := c.retrying.Load(n.origin); ok {
			r.Last = n.origin + ": " + n.err
		}
	}
	return r
}

// remember parses rec into the local cache if it is still usable at now,
// and returns the entry (nil when rec is stale).
func (c *robotsCache) remember(origin string, rec robotsRecord, now time.Time) *robotsEntry {
	life := c.ttl
	if unreachable(rec.Status) && (rec.Failures < robotsFailuresBeforeGivingUp || rec.Blocked) {
		life = c.retry // a refusal is looked at again as often: DNS changes
	}
	expires := rec.FetchedAt.Add(life)
	if !now.Before(expires) {
		return nil
	}
	rules, _ := robots.ForStatus(rec.Status, rec.Body)
	e := robotsEntry{rules: rules, rec: rec, expires: expires}
	c.mu.Lock()
	if len(c.local) >= maxLocal {
		for k := range c.local { // drop an arbitrary half: cheap, and misses only cost a bucket read
			delete(c.local, k)
			if len(c.local) < maxLocal/2 {
				break
			}
		}
	}
	c.local[origin] = e
	c.mu.Unlock()
	return &e
}

// fetch gets origin/robots.txt, following up to five redirects as RFC 9309
// asks (the HTTP client itself never follows them).
func (c *robotsCache) fetch(ctx context.Context, origin string) robotsRecord {
	target := origin + "/robots.txt"
	for hop := 0; ; hop++ {
		get := c.client.Fetch
		if c.get != nil {
			get = c.get
		}
		r := get(ctx, target)
		rec := robotsRecord{Status: r.Status, Body: r.Body, FetchedAt: c.clock().UTC()}
		if errors.Is(r.Err, ErrRedirectTooLong) {
			rec.Status, rec.Body = 404, nil // a redirect that cannot be followed: unavailable, as a chain without an end is
			return rec
		}
		if r.Err != nil {
			rec.Status, rec.Body, rec.Error = 0, nil, r.Err.Error()
			// A name that does not exist will not come back in ten
			// minutes: give the host up at once instead of retrying.
			var dnsErr *net.DNSError
			if errors.As(r.Err, &dnsErr) && dnsErr.IsNotFound {
				rec.Failures = robotsFailuresBeforeGivingUp
			}
			// Nor will an address the guard refuses become allowed: the
			// host is final at once, with the class and the flag. (A
			// redirect to a refused address leaves robots.txt unreachable
			// for good, the origin itself not refused: given up, not
			// Blocked.)
			var blocked *BlockedAddressError
			if errors.As(r.Err, &blocked) {
				rec.Failures, rec.Blocked = robotsFailuresBeforeGivingUp, hop == 0
			}
			return rec
		}
		if r.Status >= 300 && r.Status < 400 && r.Location != "" && hop < 5 {
			target = r.Location
			continue
		}
		if r.Status >= 300 && r.Status < 400 {
			rec.Status = 404 // a redirect chain without an end: RFC 9309 treats it as unavailable
		}
		if len(rec.Body) > robots.MaxSize {
			rec.Body = rec.Body[:robots.MaxSize]
		}
		return rec
	}
}

func lastError(rec robotsRecord) string {
	if rec.Error != "" {
		return rec.Error
	}
	return fmt.Sprintf("HTTP %d", rec.Status)
}
