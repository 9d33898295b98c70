// Package config is the one set of crawl settings every subcommand accepts.
//
// Settings come, lowest precedence first, from defaults, a YAML config file
// (--config), TRAWLER_* environment variables and flags. Every subcommand
// registers the whole set and ignores what it does not use, so a single
// ConfigMap can serve all Deployments of a crawl.
package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/services/fetcher"
)

// Scope modes.
const (
	ScopeHost   = scope.Host   // stay on the seeds' hosts
	ScopeDomain = scope.Domain // stay on the seeds' registrable domains
	ScopeAny    = scope.Any    // follow every link
)

// Config holds every crawl setting. Field comments give the flag and default.
type Config struct {
	// Connections.
	NATSURL      string   // --nats: external NATS URL (services); empty in run = embedded
	RedisAddrs   []string // --redis: Redis addresses; several = client-side ring of shards
	RedisCluster bool     // --redis-cluster: addresses are Redis Cluster seeds
	// --redis-password: AUTH password of every Redis node (prefer the
	// TRAWLER_REDIS_PASSWORD variable: flags show in ps)
	RedisPassword string
	RedisTLS      bool   // --redis-tls: connect to Redis over TLS
	DataDir       string // --data-dir: embedded NATS and store (run), default ./trawler-data
	Prefix        string // --prefix: subject, stream and key prefix, default "trawler"
	MetricsAddr   string // --metrics-addr: serve /metrics here (empty: off)
	LogFormat     string // --log-format: text or json, default text

	// NATS credentials and TLS, from files and the environment, never the
	// URL (which is logged): --nats-creds, --nats-nkey, --nats-user,
	// --nats-password (prefer TRAWLER_NATS_PASSWORD), --nats-token (prefer
	// TRAWLER_NATS_TOKEN), --nats-tls-ca, --nats-tls-cert, --nats-tls-key.
	NATSCreds, NATSNKey, NATSUser, NATSPassword, NATSToken string
	NATSTLSCA, NATSTLSCert, NATSTLSKey                     string

	// Partitioning.
	PartitionCount    int           // --partition-count: P, fixed for the life of a crawl, default 32 (run: 4 for a new data dir)
	Partitions        string        // --partitions: owned partitions, e.g. "0-7,12" (default: all in run, automatic leases in cluster services)
	PartitionLeaseTTL time.Duration // --partition-lease-ttl: lifetime of a partition lease (automatic ownership), default 15s
	Replicas          int           // --replicas: JetStream replicas of streams and buckets, default 1
	// PartitionCountSet is true when --partition-count was given (flag,
	// environment or config file): run then checks it against the data dir's.
	PartitionCountSet bool

	// Seeds and scope.
	Seeds     []string // --seed (repeatable)
	SeedsFile string   // --seeds-file: one URL per line, '#' comments
	Scope     string   // --scope host|domain|any, default host
	Allow     []string // --allow: URL patterns (regexp) to follow; none = all in scope (repeatable)
	Deny      []string // --deny: URL patterns (regexp) never followed (repeatable)

	// Parsing, canonical form and topical crawling (services/parser).
	LinkKinds          []string // --link-kinds: elements links are taken from, default a,area,iframe,frame,refresh
	SortQuery          bool     // --sort-query: sort query parameters in canonical URLs
	DropParams         []string // --drop-params: query parameters removed ("tracking": the built-in list)
	Topic              string   // --topic: keywords or a short text; empty = no topic
	Scoring            string   // --scoring: breadth-first|best-first|sharksearch, default breadth-first
	RelevanceThreshold float64  // --relevance-threshold: a page is relevant when A = 4B+C exceeds it, default 2

	// Limits.
	MaxPages     int // --max-pages: stop issuing fetches after N (0: no limit)
	MaxDepth     int // --max-depth: links deeper than N are not followed (-1: no limit)
	MaxURLLength int // --max-url-length: longer URLs are dropped, default 256
	// Trap limits on links (pkg/traps; 0: no limit each).
	MaxPathDepth        int // --max-path-depth: links with more path segments are dropped, default 20 (Heritrix)
	MaxRepeatedSegments int // --max-repeated-segments: links with a path segment occurring more often are dropped, default 2
	MaxQueryParams      int // --max-query-params: links with more query parameters are dropped, default 20
	// --max-pages-per-host: URLs issued per host over the crawl, default
	// 100000 (0: no limit)
	MaxPagesPerHost int
	// --max-queue-per-host: URLs queued per host; the lowest-priority one
	// goes when it is full (0: no limit), default 100000
	MaxQueuePerHost int

	// Politeness and fetching.
	PolitenessDelay  time.Duration // --politeness-delay: gap between requests to a host, default 1s
	IPMaxConcurrent  int           // --ip-max-concurrent: requests in flight per server IP address, all fetchers together, default 4 (0: no limit)
	IPDelay          time.Duration // --ip-delay: gap between request starts per server IP address, default 0
	PolitenessFactor float64       // --politeness-factor: gap >= k x last response time, default 10 (Mercator)
	IssueAhead       time.Duration // --issue-ahead: a task may leave the frontier this long before its host's gap ends, default 0
	MaxCrawlDelay    time.Duration // --max-crawl-delay: cap on robots.txt Crawl-delay, default 30s
	// --politeness-max-gap: cap on what Crawl-delay, k x response time and
	// failure backoff add to a host's rest, default 30s (Heritrix's max-delay-ms)
	PolitenessMaxGap time.Duration
	IgnoreRobots     bool          // --ignore-robots: do not fetch or obey robots.txt (default: obey)
	RobotsTTL        time.Duration // --robots-ttl: how long a host's robots.txt is trusted, default 24h
	RobotsRetry      time.Duration // --robots-retry: wait after robots.txt answered 5xx or not at all, default 30s (the host is given up after 3 such answers in a row)
	FetchTimeout     time.Duration // --fetch-timeout: whole request, default 30s
	MinTransferRate  int64         // --min-transfer-rate: least body bytes/s over each 5 s window from the headers on, default 1024 (0: off)
	MaxBodyBytes     int64         // --max-body: body cap in bytes, default 1 MiB (also capped by NATS max_payload)
	MaxRedirects     int           // --max-redirects: redirect hops followed per chain, default 5
	UserAgent        string        // --user-agent
	AllowedTypes     []string      // --allowed-types: content types downloaded (default HTML, XHTML, plain text)
	AllowPrivate     bool          // --allow-private: permit loopback, private, CGNAT, benchmarking and documentation addresses
	AllowLinkLocal   bool          // --allow-link-local: with --allow-private, also link-local addresses and cloud metadata services
	FetchWorkers     int           // --fetch-workers: concurrent fetches per fetcher, default 64
	WithParser       bool          // --with-parser: `trawler fetcher` runs the parser too and parses its pages in process
	FetchBacklog     int           // --fetch-backlog: fetched pages waiting to be parsed before fetching waits, default 1000 (0: no limit)
	ParseWorkers     int           // --parse-workers: concurrent parses per parser, default 16
	MaxAttempts      int           // --max-attempts: issues of a URL whose task was lost, default 3
	MaxDeferrals     int           // --max-deferrals: times a URL may be handed back unfetched before it ends as failed, default 50

	// Name resolution.
	Resolver       string        // --resolver: trawler (cached, asynchronous) or system
	DNSServers     []string      // --dns-servers: ip[:port],... (default: /etc/resolv.conf)
	DNSCacheSize   int           // --dns-cache-size: names cached, default 50000
	DNSRefresh     time.Duration // --dns-refresh: longest an answer is used, default 30m
	DNSNegativeTTL time.Duration // --dns-negative-ttl: how long failures are cached, default 30s
	DNSIgnoreTTL   bool          // --dns-ignore-ttl: keep answers --dns-refresh whatever their TTL

	// Dedup layers.
	DedupCache        string  // --dedup-cache: clock|lru|random|static, default clock
	DedupCacheSize    int     // --dedup-cache-size: entries per dedup replica, default 50000
	DedupStaticFile   string  // --dedup-static-file: fingerprints for the static cache
	DedupExpectedURLs int     // --dedup-expected-urls: crawl size the Bloom filters are sized for
	DedupBloomFP      float64 // --dedup-bloom-fp: target false-positive rate, default 0.01
	SplitterCacheSize int     // --splitter-cache-size: links a parser remembers sending, default 500000 (0: off)
	TraceDir          string  // --trace-dir: record fingerprint traces for `trawler cachesim` here (empty: off)

	// Delivery.
	MaxDeliver  int           // --max-deliver: deliveries before a message is dead-lettered, default 10
	DedupWindow time.Duration // --dedup-window: JetStream duplicate window, default 2m (at least FetchAckWait + FetchTimeout)

	// Near-duplicates (parser): --near-duplicates (off by default), the
	// distance in bits, pages remembered per host, and whether a
	// near-duplicate's links are followed.
	// --sitemaps: read the sitemaps robots.txt names (fetcher, parser).
	Sitemaps bool
	// --sitemap-guess: with --sitemaps, /sitemap.xml when robots.txt names none.
	SitemapGuess bool

	// Continuous crawling (frontier): --revisit-min and --revisit-max bound
	// the adaptive revisit interval; both 0 (the default): every URL is
	// visited once and the crawl ends.
	RevisitMin, RevisitMax time.Duration

	NearDuplicates         bool
	NearDuplicateDistance  int
	NearDuplicateWindow    int
	NearDuplicateSkipLinks bool

	// Output (run).
	Out string // --out: JSON Lines file, one object per fetched URL
	// --parsed-text: put each page's text in pages.parsed (default: metadata
	// and links only; on by itself in run with --out or --archive)
	ParsedText bool
	// --parsed-max-age, --parsed-max-bytes: how much of pages.parsed is kept
	// for taps that attach later, oldest dropped first; default 7 days, 1 GiB
	ParsedMaxAge   time.Duration
	ParsedMaxBytes int64
	// --parsed-retention: limits (keep documents up to ParsedMaxAge and
	// ParsedMaxBytes for taps that attach later) or interest (keep each
	// until every durable consumer acked it, those limits as a ceiling).
	// Empty: interest in run (OpenEmbedded sets it), limits for the services.
	ParsedRetention string
	Progress        bool // --progress: live progress line on stderr (run), default true

	// Archive (run, archive): WARC files of pages.fetched and JSON Lines of
	// pages.parsed go to this directory (services/archive).
	Archive          string        // --archive: directory (empty: off)
	ArchiveMaxSize   int64         // --archive-max-size: complete a file at this size, default 1 GiB
	ArchiveMaxAge    time.Duration // --archive-max-age: complete a file at this age, default 1h
	ArchiveGzipLevel int           // --archive-gzip-level: WARC records' gzip level, 1-9, default 3
}

// DefaultUserAgent is the fetcher's: it identifies the crawler with a
// contact URL, as polite crawlers do.
const DefaultUserAgent = fetcher.DefaultUserAgent

// FetchAckWait is how long a fetcher may hold a task before JetStream gives
// it to another: two whole fetches (robots.txt, then the page) and a margin.
func (c *Config) FetchAckWait() time.Duration { return 2*c.FetchTimeout + 5*time.Second }

// OwnedPartitions parses --partitions; empty means all of 0..P-1.
func (c *Config) OwnedPartitions() ([]int, error) {
	if strings.TrimSpace(c.Partitions) == "" || c.Partitions == "all" {
		all := make([]int, c.PartitionCount)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(c.Partitions, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= c.PartitionCount {
			return nil, fmt.Errorf("--partitions %q: %q is not a partition or range within 0..%d", c.Partitions, part, c.PartitionCount-1)
		}
		for p := a; p <= b; p++ {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// AllSeeds returns --seed values followed by the lines of --seeds-file.
func (c *Config) AllSeeds() ([]string, error) {
	seeds := append([]string(nil), c.Seeds...)
	if c.SeedsFile == "" {
		return seeds, nil
	}
	data, err := os.ReadFile(c.SeedsFile)
	if err != nil {
		return nil, fmt.Errorf("--seeds-file: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			seeds = append(seeds, line)
		}
	}
	return seeds, nil
}
