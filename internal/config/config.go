// Package config is the one set of crawl settings every subcommand accepts.
//
// Settings come, lowest precedence first, from defaults, a YAML config file
// (--config), TRAWLER_* environment variables and flags. Every subcommand
// registers the whole set and ignores what it does not use, so a single
// ConfigMap can serve all Deployments of a crawl.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffyaml"

	"github.com/trawlerhq/trawler/pkg/redact"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/services/fetcher"
	"github.com/trawlerhq/trawler/services/parser"
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
	IssueAhead       time.Duration // --issue-ahead: a task may leave the frontier this long before its host's gap ends (experimental), default 0
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
	SplitterCacheSize int     // --splitter-cache-size: links a parser remembers sending, default 50000 (0: off)
	TraceDir          string  // --trace-dir: record fingerprint traces for `trawler cachesim` here (empty: off)

	// Delivery.
	MaxDeliver  int           // --max-deliver: deliveries before a message is dead-lettered, default 10
	DedupWindow time.Duration // --dedup-window: JetStream duplicate window, default 2m (at least FetchAckWait + FetchTimeout)

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
	Archive        string        // --archive: directory (empty: off)
	ArchiveMaxSize int64         // --archive-max-size: complete a file at this size, default 1 GiB
	ArchiveMaxAge  time.Duration // --archive-max-age: complete a file at this age, default 1h
}

// DefaultUserAgent is the fetcher's: it identifies the crawler with a
// contact URL, as polite crawlers do.
const DefaultUserAgent = fetcher.DefaultUserAgent

// Register declares every setting on fs with its default.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.NATSURL, "nats", "", "NATS URL of an external JetStream server (services default to nats://127.0.0.1:4222; run embeds one when empty)")
	fs.StringVar(&c.NATSCreds, "nats-creds", "", "NATS credentials file (user JWT and NKey seed)")
	fs.StringVar(&c.NATSNKey, "nats-nkey", "", "file holding a NATS user NKey seed")
	fs.StringVar(&c.NATSUser, "nats-user", "", "NATS user name")
	fs.StringVar(&c.NATSPassword, "nats-password", "", "NATS password (prefer the TRAWLER_NATS_PASSWORD variable: flags show in ps)")
	fs.StringVar(&c.NATSToken, "nats-token", "", "NATS authentication token (prefer the TRAWLER_NATS_TOKEN variable)")
	fs.StringVar(&c.NATSTLSCA, "nats-tls-ca", "", "PEM file of CAs to trust for the NATS server's certificate, besides the system's")
	fs.StringVar(&c.NATSTLSCert, "nats-tls-cert", "", "PEM client certificate for NATS (mutual TLS; with --nats-tls-key)")
	fs.StringVar(&c.NATSTLSKey, "nats-tls-key", "", "PEM private key of --nats-tls-cert")
	fs.Var((*listFlag)(&c.RedisAddrs), "redis", "Redis address(es), comma-separated; several form a client-side ring of shards (services default to 127.0.0.1:6379)")
	fs.BoolVar(&c.RedisCluster, "redis-cluster", false, "treat --redis addresses as Redis Cluster seed nodes")
	fs.StringVar(&c.RedisPassword, "redis-password", "", "Redis AUTH password (prefer TRAWLER_REDIS_PASSWORD: flags are visible to other processes)")
	fs.BoolVar(&c.RedisTLS, "redis-tls", false, "connect to Redis over TLS, verifying the server against the system roots (SSL_CERT_FILE / SSL_CERT_DIR add a private CA)")
	fs.StringVar(&c.DataDir, "data-dir", "./trawler-data", "directory for the embedded NATS server and store (run)")
	fs.StringVar(&c.Prefix, "prefix", subjects.DefaultPrefix, "prefix of subjects, streams and store keys; lets several crawls share one NATS and Redis")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address, e.g. 127.0.0.1:9090 (empty: off)")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format on stderr: text (logfmt-like) or json (one object per line, for log collectors)")
	fs.IntVar(&c.PartitionCount, "partition-count", 32, "number of host partitions P; fixed for the life of a crawl (run: 4 for a new data dir, then the data dir's)")
	fs.StringVar(&c.Partitions, "partitions", "", "partitions this replica owns, e.g. 0-7,12 (default: all in run; dedup and frontier services share them automatically through leases)")
	fs.IntVar(&c.Replicas, "replicas", 1, "replicas of the crawl's JetStream streams and key-value buckets on a NATS cluster (3 survives the loss of a node; 1 on a single server)")
	fs.DurationVar(&c.PartitionLeaseTTL, "partition-lease-ttl", 15*time.Second, "lifetime of a partition lease with automatic ownership: a dead replica's partitions move after at most this long")
	fs.Var((*appendFlag)(&c.Seeds), "seed", "seed URL (repeatable)")
	fs.StringVar(&c.SeedsFile, "seeds-file", "", "file of seed URLs, one per line ('#' starts a comment)")
	fs.StringVar(&c.Scope, "scope", ScopeHost, "which links to follow: host (the seeds' hosts), domain (their registrable domains) or any")
	fs.Var((*appendFlag)(&c.Allow), "allow", "follow only URLs matching this regular expression (repeatable; none: every URL in scope)")
	fs.Var((*appendFlag)(&c.Deny), "deny", "never follow URLs matching this regular expression (repeatable; wins over --allow)")
	fs.Var((*listFlag)(&c.LinkKinds), "link-kinds", "elements links are taken from, comma-separated: a, area, link, img, iframe, frame, script, form, refresh, or all (default a,area,iframe,frame,refresh)")
	fs.BoolVar(&c.SortQuery, "sort-query", false, "sort query parameters in canonical URLs (keys the crawl: keep it for the crawl's life)")
	fs.Var((*listFlag)(&c.DropParams), "drop-params", "query parameters removed from URLs, comma-separated; \"tracking\" adds the built-in list of tracking and session parameters")
	fs.StringVar(&c.Topic, "topic", "", "topic of a focused crawl: keywords or a short text")
	fs.StringVar(&c.Scoring, "scoring", "breadth-first", "link scoring: breadth-first, best-first (parent page's relevance) or sharksearch (needs --topic)")
	fs.Float64Var(&c.RelevanceThreshold, "relevance-threshold", 2, "a page is relevant when its relevance A = 4*title + body similarity (0..5) exceeds this")
	fs.IntVar(&c.MaxPages, "max-pages", 0, "stop issuing fetches after this many (0: no limit)")
	fs.IntVar(&c.MaxDepth, "max-depth", -1, "do not follow links deeper than this many hops from a seed (-1: no limit)")
	fs.IntVar(&c.MaxURLLength, "max-url-length", parser.DefaultMaxURLLength, "drop URLs longer than this")
	fs.IntVar(&c.MaxPathDepth, "max-path-depth", parser.DefaultMaxPathDepth, "drop links whose path has more segments than this, against ever-deeper traps (0: no limit)")
	fs.IntVar(&c.MaxRepeatedSegments, "max-repeated-segments", parser.DefaultMaxRepeatedSegments, "drop links in whose path one segment occurs more often than this (/a/b/a/b/a), against looping relative links (0: no limit)")
	fs.IntVar(&c.MaxQueryParams, "max-query-params", parser.DefaultMaxQueryParams, "drop links with more query parameters than this, against query explosions (0: no limit)")
	fs.IntVar(&c.MaxPagesPerHost, "max-pages-per-host", 100000, "issue at most this many URLs of one host over the crawl, against spider traps such as endless calendars (0: no limit)")
	fs.IntVar(&c.MaxQueuePerHost, "max-queue-per-host", 100000, "queue at most this many URLs per host; beyond it the lowest-priority URL is dropped (0: no limit)")
	fs.DurationVar(&c.PolitenessDelay, "politeness-delay", time.Second, "minimum gap between two requests to one host")
	fs.IntVar(&c.IPMaxConcurrent, "ip-max-concurrent", 4, "most requests in flight to one server IP address, across all fetchers (0: no limit)")
	fs.DurationVar(&c.IPDelay, "ip-delay", 0, "least time between two request starts to one server IP address, across all fetchers")
	fs.Float64Var(&c.PolitenessFactor, "politeness-factor", 10, "a host also rests this many times its last response time (Mercator's k)")
	fs.DurationVar(&c.IssueAhead, "issue-ahead", 0, "experimental: issue a host's next task up to this long before its politeness gap ends; the fetcher holds it until then (0: issue when the gap is over)")
	fs.DurationVar(&c.MaxCrawlDelay, "max-crawl-delay", 30*time.Second, "cap on a robots.txt Crawl-delay")
	fs.DurationVar(&c.PolitenessMaxGap, "politeness-max-gap", 30*time.Second, "cap on the rest a host's Crawl-delay, slow responses (k x response time) and failure backoff add; --politeness-delay holds above it")
	fs.BoolVar(&c.IgnoreRobots, "ignore-robots", false, "do not fetch or obey robots.txt (only for sites you own)")
	fs.DurationVar(&c.RobotsTTL, "robots-ttl", 24*time.Hour, "how long a host's robots.txt is used before it is fetched again")
	fs.DurationVar(&c.RobotsRetry, "robots-retry", 30*time.Second, "how long a host is left alone when its robots.txt answered 5xx or not at all; after 3 such answers in a row (about twice this long) its URLs end as failed with the reason")
	fs.DurationVar(&c.FetchTimeout, "fetch-timeout", 30*time.Second, "time limit of one request, body included")
	fs.Int64Var(&c.MinTransferRate, "min-transfer-rate", 1024, "least body bytes per second, measured over each 5 s window from the response headers on; a slower body ends as failed (kind slow) with what came (0: off)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body", 1<<20, "body size cap in bytes (also capped by the NATS server's max_payload)")
	fs.IntVar(&c.MaxRedirects, "max-redirects", parser.DefaultMaxRedirects, "redirect hops followed in one chain")
	fs.StringVar(&c.UserAgent, "user-agent", DefaultUserAgent, "User-Agent header; include a contact URL")
	fs.Var((*listFlag)(&c.AllowedTypes), "allowed-types", "content types whose bodies are downloaded, comma-separated; type/* allowed (default text/html,application/xhtml+xml,text/plain)")
	fs.BoolVar(&c.AllowPrivate, "allow-private", false, "permit fetching loopback, private (RFC 1918, unique-local), carrier-grade NAT, benchmarking and documentation addresses (link-local and cloud metadata need --allow-link-local too)")
	fs.BoolVar(&c.AllowLinkLocal, "allow-link-local", false, "with --allow-private, also permit link-local addresses and the cloud metadata services (169.254.169.254 and the like): only on a machine where that is safe")
	fs.IntVar(&c.FetchWorkers, "fetch-workers", 64, "concurrent fetches per fetcher process")
	fs.IntVar(&c.ParseWorkers, "parse-workers", 16, "concurrent parses per parser process (each waits for NATS to acknowledge its page's links, so more than the cores)")
	fs.IntVar(&c.MaxAttempts, "max-attempts", 3, "times a URL is issued when its fetch result never comes back")
	fs.IntVar(&c.MaxDeferrals, "max-deferrals", 50, "times a URL may be handed back unfetched (robots.txt unreachable, its server's per-IP slot busy) before it ends as failed (kind deferred)")
	fs.StringVar(&c.Resolver, "resolver", "trawler", "name resolver of the fetcher: trawler (cached, asynchronous, after Chen and Yan) or system (Go's)")
	fs.Var((*listFlag)(&c.DNSServers), "dns-servers", "DNS servers for --resolver trawler, ip[:port] comma-separated (default: from /etc/resolv.conf)")
	fs.IntVar(&c.DNSCacheSize, "dns-cache-size", 50000, "host names the resolver caches")
	fs.DurationVar(&c.DNSRefresh, "dns-refresh", 30*time.Minute, "longest a cached DNS answer is used")
	fs.DurationVar(&c.DNSNegativeTTL, "dns-negative-ttl", 30*time.Second, "how long a failed lookup is cached")
	fs.BoolVar(&c.DNSIgnoreTTL, "dns-ignore-ttl", false, "keep answers --dns-refresh whatever their DNS TTL (the paper's behaviour)")
	fs.StringVar(&c.DedupCache, "dedup-cache", "clock", "dedup cache policy: clock, lru, random or static")
	fs.IntVar(&c.DedupCacheSize, "dedup-cache-size", 50000, "dedup cache entries per dedup replica (the paper's critical size)")
	fs.StringVar(&c.DedupStaticFile, "dedup-static-file", "", "file of the most frequent fingerprints of an earlier crawl, for --dedup-cache static")
	fs.IntVar(&c.DedupExpectedURLs, "dedup-expected-urls", 10_000_000, "distinct URLs the crawl is expected to see; sizes the Bloom filters")
	fs.Float64Var(&c.DedupBloomFP, "dedup-bloom-fp", 0.01, "Bloom filter false-positive rate at --dedup-expected-urls")
	fs.IntVar(&c.SplitterCacheSize, "splitter-cache-size", 50000, "recently sent links a parser holds back instead of sending again (0: off)")
	fs.StringVar(&c.TraceDir, "trace-dir", "", "record URL fingerprint traces in this directory for 'trawler cachesim': dedup's full trace and the parser's cross subtrace (empty: off)")
	fs.IntVar(&c.MaxDeliver, "max-deliver", 10, "deliveries of a failing message before it goes to the dead-letter subject")
	fs.DurationVar(&c.DedupWindow, "dedup-window", 2*time.Minute, "JetStream duplicate window (Nats-Msg-Id) of the streams: a publish replayed within it is stored once; the NATS server keeps every ID this long (about 230 bytes each; link batches at most 5s)")
	fs.StringVar(&c.Out, "out", "", "write one JSON object per fetched URL to this file (JSON Lines; run)")
	fs.DurationVar(&c.ParsedMaxAge, "parsed-max-age", 7*24*time.Hour, "keep parsed documents in pages.parsed this long for taps that attach later")
	fs.Int64Var(&c.ParsedMaxBytes, "parsed-max-bytes", 1<<30, "keep at most this many bytes of parsed documents in pages.parsed (stored compressed); the oldest go first")
	fs.StringVar(&c.ParsedRetention, "parsed-retention", "", "how long pages.parsed keeps a document: limits (up to --parsed-max-age and --parsed-max-bytes, for taps that attach later) or interest (until every durable consumer acked it); default interest in run, limits for the services")
	fs.BoolVar(&c.ParsedText, "parsed-text", false, "put each page's visible text in the parsed documents of pages.parsed (parser; default: metadata and links only; run turns it on with --out or --archive)")
	fs.StringVar(&c.Archive, "archive", "", "write WARC files of every fetched page and JSON Lines of parsed pages to this directory (run, archive)")
	fs.Int64Var(&c.ArchiveMaxSize, "archive-max-size", 1<<30, "complete an archive file once it has this many bytes")
	fs.DurationVar(&c.ArchiveMaxAge, "archive-max-age", time.Hour, "complete an archive file this long after it was opened")
	fs.BoolVar(&c.Progress, "progress", true, "show a live progress line on stderr (run)")
}

// Parse registers the settings on fs and fills c from defaults, the config
// file, TRAWLER_* environment variables and args, in rising precedence.
// A key of the config file that names no setting is an error (see
// checkConfigKeys); errors name the flag, variable or file line at fault.
func (c *Config) Parse(fs *flag.FlagSet, args []string) error {
	c.Register(fs)
	fs.String("config", "", "YAML config file with any of these settings (keys are flag names)")
	if err := ff.Parse(fs, args,
		ff.WithEnvVarPrefix("TRAWLER"),
		ff.WithConfigFileFlag("config"),
		ff.WithConfigFileParser(ffyaml.Parser),
		ff.WithIgnoreUndefined(true),
	); err != nil {
		return parseError(err, fs)
	}
	if err := checkConfigKeys(fs); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { // ff sets environment and file values as flags too
		c.PartitionCountSet = c.PartitionCountSet || f.Name == "partition-count"
	})
	return nil
}

// Validate reports every invalid setting at once.
func (c *Config) Validate() error {
	var errs []error
	if _, err := subjects.New(c.Prefix); err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	for _, a := range c.RedisAddrs { // addresses, not URLs: a password in one would be printed
		if strings.Contains(a, "@") || strings.Contains(a, "://") {
			errs = append(errs, fmt.Errorf("--redis %s: want host:port; the password goes in TRAWLER_REDIS_PASSWORD (or --redis-password), TLS is --redis-tls", redact.URLs(a)))
		}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", c.LogFormat))
	}
	if c.PartitionCount < 1 || c.PartitionCount > 4096 {
		errs = append(errs, fmt.Errorf("--partition-count %d: want 1..4096", c.PartitionCount))
	}
	if _, err := c.OwnedPartitions(); err != nil {
		errs = append(errs, err)
	}
	switch c.Scope {
	case ScopeHost, ScopeDomain, ScopeAny:
	default:
		errs = append(errs, fmt.Errorf("--scope %q: want host, domain or any", c.Scope))
	}
	switch c.Scoring {
	case "breadth-first":
	case "best-first", "sharksearch":
		if strings.TrimSpace(c.Topic) == "" {
			errs = append(errs, fmt.Errorf("--scoring %s needs a --topic", c.Scoring))
		}
	default:
		errs = append(errs, fmt.Errorf("--scoring %q: want breadth-first, best-first or sharksearch", c.Scoring))
	}
	if c.MaxPages < 0 {
		errs = append(errs, fmt.Errorf("--max-pages %d: want 0 (no limit) or more", c.MaxPages))
	}
	if c.MaxDepth < -1 {
		errs = append(errs, fmt.Errorf("--max-depth %d: want -1 (no limit) or more", c.MaxDepth))
	}
	if c.MaxURLLength < 16 {
		errs = append(errs, fmt.Errorf("--max-url-length %d: want at least 16", c.MaxURLLength))
	}
	if c.MaxPathDepth < 0 || c.MaxRepeatedSegments < 0 || c.MaxQueryParams < 0 {
		errs = append(errs, errors.New("--max-path-depth, --max-repeated-segments and --max-query-params must not be negative (0: no limit)"))
	}
	if c.PolitenessDelay < 0 {
		errs = append(errs, fmt.Errorf("--politeness-delay %s: must not be negative", c.PolitenessDelay))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("--replicas %d: want 1..5", c.Replicas))
	}
	if c.MaxPagesPerHost < 0 || c.MaxQueuePerHost < 0 || c.IPMaxConcurrent < 0 || c.IPDelay < 0 {
		errs = append(errs, errors.New("--max-pages-per-host, --max-queue-per-host, --ip-max-concurrent and --ip-delay must not be negative"))
	}
	if c.IssueAhead < 0 {
		errs = append(errs, errors.New("--issue-ahead must not be negative"))
	}
	if c.PolitenessFactor < 0 || c.MaxCrawlDelay < 0 {
		errs = append(errs, errors.New("--politeness-factor and --max-crawl-delay must not be negative"))
	}
	if c.PolitenessMaxGap <= 0 {
		errs = append(errs, errors.New("--politeness-max-gap must be positive (it caps how long one slow or failing host rests)"))
	}
	if c.RobotsTTL <= 0 || c.RobotsRetry <= 0 {
		errs = append(errs, errors.New("--robots-ttl and --robots-retry must be positive"))
	}
	if c.FetchTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--fetch-timeout %s: must be positive", c.FetchTimeout))
	}
	if c.AllowLinkLocal && !c.AllowPrivate {
		errs = append(errs, errors.New("--allow-link-local opens link-local and cloud metadata addresses on top of --allow-private: pass both"))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("--max-body %d: want at least 1024", c.MaxBodyBytes))
	}
	if c.MaxRedirects < 0 {
		errs = append(errs, fmt.Errorf("--max-redirects %d: must not be negative", c.MaxRedirects))
	}
	if c.FetchWorkers < 1 || c.ParseWorkers < 1 {
		errs = append(errs, errors.New("--fetch-workers and --parse-workers must be at least 1"))
	}
	if c.MaxAttempts < 1 || c.MaxDeliver < 1 {
		errs = append(errs, errors.New("--max-attempts and --max-deliver must be at least 1"))
	}
	if c.MaxDeferrals < 1 {
		errs = append(errs, fmt.Errorf("--max-deferrals %d: must be at least 1", c.MaxDeferrals))
	}
	if c.MinTransferRate < 0 {
		errs = append(errs, fmt.Errorf("--min-transfer-rate %d: must not be negative (0 turns it off)", c.MinTransferRate))
	}
	if c.Resolver != "trawler" && c.Resolver != "system" {
		errs = append(errs, fmt.Errorf("--resolver %q: want trawler or system", c.Resolver))
	}
	if c.DNSCacheSize < 1 || c.DNSRefresh <= 0 {
		errs = append(errs, errors.New("--dns-cache-size and --dns-refresh must be positive"))
	}
	switch c.DedupCache {
	case "clock", "lru", "random":
	case "static":
		if c.DedupStaticFile == "" {
			errs = append(errs, errors.New("--dedup-cache static needs --dedup-static-file"))
		}
	default:
		errs = append(errs, fmt.Errorf("--dedup-cache %q: want clock, lru, random or static", c.DedupCache))
	}
	switch c.ParsedRetention {
	case "", "limits", "interest":
	default:
		errs = append(errs, fmt.Errorf("--parsed-retention %q: want limits or interest", c.ParsedRetention))
	}
	if c.SplitterCacheSize < 0 {
		errs = append(errs, errors.New("--splitter-cache-size must not be negative"))
	}
	if c.DedupCacheSize < 1 || c.DedupExpectedURLs < 1 || c.DedupBloomFP <= 0 || c.DedupBloomFP >= 1 {
		errs = append(errs, errors.New("--dedup-cache-size and --dedup-expected-urls must be positive, --dedup-bloom-fp in (0,1)"))
	}
	if c.DedupWindow <= 0 {
		errs = append(errs, fmt.Errorf("--dedup-window %s: must be positive", c.DedupWindow))
	} else if c.FetchTimeout > 0 && c.DedupWindow < c.FetchAckWait()+c.FetchTimeout {
		// A task whose fetcher died after publishing is fetched again
		// after the ack wait; the replayed page must still be recognised.
		errs = append(errs, fmt.Errorf("--dedup-window %s: want at least %s with --fetch-timeout %s (a crashed fetcher's task is fetched again after %s, which may take %s more)",
			c.DedupWindow, c.FetchAckWait()+c.FetchTimeout, c.FetchTimeout, c.FetchAckWait(), c.FetchTimeout))
	}
	if strings.TrimSpace(c.UserAgent) == "" {
		errs = append(errs, errors.New("--user-agent must not be empty"))
	}
	return errors.Join(errs...)
}

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

// listFlag is a repeatable flag whose values may also be comma-separated, so
// that it works the same from flags, environment variables and YAML lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// appendFlag is a repeatable flag kept verbatim (URLs may contain commas).
type appendFlag []string

func (l *appendFlag) String() string { return strings.Join(*l, " ") }

func (l *appendFlag) Set(v string) error {
	if v = strings.TrimSpace(v); v != "" {
		*l = append(*l, v)
	}
	return nil
}
