package config

// The settings as flags: Register declares each with its default and help,
// Parse fills a Config from defaults, the config file, TRAWLER_* variables
// and flags, and the repeatable list flags.

import (
	"flag"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffyaml"

	"github.com/trawlerhq/trawler/pkg/simhash"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/services/parser"
)

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
	fs.IntVar(&c.MaxPagesPerHost, "max-pages-per-host", DefaultMaxPagesPerHost, "issue at most this many URLs of one host over the crawl, against spider traps such as endless calendars (0: no limit; not with --revisit-max)")
	fs.IntVar(&c.MaxQueuePerHost, "max-queue-per-host", 100000, "queue at most this many URLs per host; beyond it the lowest-priority URL is dropped (0: no limit)")
	fs.DurationVar(&c.PolitenessDelay, "politeness-delay", time.Second, "minimum gap between two requests to one host")
	fs.IntVar(&c.IPMaxConcurrent, "ip-max-concurrent", 4, "most requests in flight to one server IP address, across all fetchers (0: no limit)")
	fs.DurationVar(&c.IPDelay, "ip-delay", 0, "least time between two request starts to one server IP address, across all fetchers")
	fs.Float64Var(&c.PolitenessFactor, "politeness-factor", 10, "a host also rests this many times its last response time (Mercator's k)")
	fs.DurationVar(&c.IssueAhead, "issue-ahead", 0, "issue a host's next task up to this long before its politeness gap ends; the fetcher holds it until then, and the trip overlaps the gap (0: issue when the gap is over)")
	fs.DurationVar(&c.MaxCrawlDelay, "max-crawl-delay", 30*time.Second, "cap on a robots.txt Crawl-delay")
	fs.DurationVar(&c.PolitenessMaxGap, "politeness-max-gap", 30*time.Second, "cap on the rest a host's Crawl-delay, slow responses (k x response time) and failure backoff add; --politeness-delay holds above it")
	fs.BoolVar(&c.IgnoreRobots, "ignore-robots", false, "do not fetch or obey robots.txt (only for sites you own)")
	fs.DurationVar(&c.RobotsTTL, "robots-ttl", 24*time.Hour, "how long a host's robots.txt is used before it is fetched again")
	fs.DurationVar(&c.RobotsRetry, "robots-retry", 30*time.Second, "how long a host is left alone when its robots.txt answered 5xx or not at all; after 3 such answers in a row (about twice this long) its URLs end as failed with the reason")
	fs.DurationVar(&c.FetchTimeout, "fetch-timeout", 30*time.Second, "time limit of one request, body included")
	fs.Int64Var(&c.MinTransferRate, "min-transfer-rate", 1024, "least body bytes per second, measured over each 5 s window from the response headers on; a slower body ends as failed (kind slow) with what came (0: off)")
	c.MaxBodyBytes = 1 << 20
	fs.Var((*Size)(&c.MaxBodyBytes), "max-body", "body size cap: bytes, or a number with KiB, MiB, GiB, KB, MB or GB, e.g. 4MiB (also capped by the NATS server's max_payload)")
	fs.IntVar(&c.MaxRedirects, "max-redirects", parser.DefaultMaxRedirects, "redirect hops followed in one chain")
	fs.StringVar(&c.UserAgent, "user-agent", DefaultUserAgent, "User-Agent header; include a contact URL")
	fs.Var((*listFlag)(&c.AllowedTypes), "allowed-types", "content types whose bodies are downloaded, comma-separated; type/* allowed (default text/html,application/xhtml+xml,text/plain)")
	fs.BoolVar(&c.AllowPrivate, "allow-private", false, "permit fetching loopback, private (RFC 1918, unique-local), carrier-grade NAT, benchmarking and documentation addresses (link-local and cloud metadata need --allow-link-local too)")
	fs.BoolVar(&c.AllowLinkLocal, "allow-link-local", false, "with --allow-private, also permit link-local addresses and the cloud metadata services (169.254.169.254 and the like): only on a machine where that is safe")
	fs.IntVar(&c.FetchWorkers, "fetch-workers", 64, "concurrent fetches per fetcher process")
	fs.BoolVar(&c.WithParser, "with-parser", false, "trawler fetcher: run the parser in this process too, and parse each page in the worker that fetched it instead of sending it over pages.fetched, while nothing but the parser reads that subject (the parser's settings apply)")
	fs.IntVar(&c.FetchBacklog, "fetch-backlog", DefaultFetchBacklog, "fetchers wait while this many fetched pages wait to be parsed (in run with --archive, or archived): a fetcher ahead of its parser only fills the stream, and memory (0: no limit)")
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
	fs.IntVar(&c.SplitterCacheSize, "splitter-cache-size", 500000, "recently sent links a parser holds back instead of sending again (0: off)")
	fs.StringVar(&c.TraceDir, "trace-dir", "", "record URL fingerprint traces in this directory for 'trawler cachesim': dedup's full trace and the parser's cross subtrace (empty: off)")
	fs.IntVar(&c.MaxDeliver, "max-deliver", 10, "deliveries of a failing message before it goes to the dead-letter subject")
	fs.DurationVar(&c.DedupWindow, "dedup-window", 2*time.Minute, "JetStream duplicate window (Nats-Msg-Id) of the streams: a publish replayed within it is stored once; the NATS server keeps every ID this long (about 230 bytes each; link batches at most 5s)")
	fs.StringVar(&c.Out, "out", "", "write one JSON object per fetched URL to this file (JSON Lines; run)")
	fs.DurationVar(&c.ParsedMaxAge, "parsed-max-age", 7*24*time.Hour, "keep parsed documents in pages.parsed this long for taps that attach later")
	fs.Int64Var(&c.ParsedMaxBytes, "parsed-max-bytes", 1<<30, "keep at most this many bytes of parsed documents in pages.parsed (stored compressed); the oldest go first")
	fs.StringVar(&c.ParsedRetention, "parsed-retention", "", "how long pages.parsed keeps a document: limits (up to --parsed-max-age and --parsed-max-bytes, for taps that attach later) or interest (until every durable consumer acked it); default interest in run, limits for the services")
	fs.BoolVar(&c.ParsedText, "parsed-text", false, "put each page's visible text in the parsed documents of pages.parsed (parser; default: metadata and links only; run turns it on with --out or --archive)")
	fs.BoolVar(&c.Sitemaps, "sitemaps", false, "read the sitemaps robots.txt names on each host's own origin: their URLs are followed like links (scope, allow/deny, trap limits, depth), sitemap indexes one level deep")
	fs.BoolVar(&c.SitemapGuess, "sitemap-guess", false, "with --sitemaps: read /sitemap.xml of a host whose robots.txt names no sitemap (one request per host; a 404 when it is not there)")
	fs.DurationVar(&c.RevisitMin, "revisit-min", 0, "continuous crawl: revisit every fetched URL, at least this long after its last visit (with --revisit-max; 0: visit once and end)")
	fs.DurationVar(&c.RevisitMax, "revisit-max", 0, "continuous crawl: revisit every fetched URL at most this long after its last visit; the interval adapts between the two (Nutch's adaptive schedule)")
	fs.BoolVar(&c.NearDuplicates, "near-duplicates", false, "fingerprint each HTML page's text (SimHash) and mark a page near_duplicate_of an earlier page of its host in pages.parsed (parser)")
	fs.IntVar(&c.NearDuplicateDistance, "near-duplicate-distance", simhash.DefaultDistance, "bits of Hamming distance at or under which two pages' fingerprints make them near-duplicates (0 to 15)")
	fs.IntVar(&c.NearDuplicateWindow, "near-duplicate-window", parser.DefaultNearDuplicatePerHost, "earlier pages per host whose fingerprints a parser remembers (about 150 bytes each; the 128 most recently parsed hosts are kept)")
	fs.BoolVar(&c.NearDuplicateSkipLinks, "near-duplicate-skip-links", false, "do not follow the links of a near-duplicate page: cuts traps that serve one page under endless URLs, misses links found only there")
	fs.StringVar(&c.Archive, "archive", "", "write WARC files of every fetched page and JSON Lines of parsed pages to this directory (run, archive)")
	fs.Int64Var(&c.ArchiveMaxSize, "archive-max-size", 1<<30, "complete an archive file once it has this many bytes")
	fs.DurationVar(&c.ArchiveMaxAge, "archive-max-age", time.Hour, "complete an archive file this long after it was opened")
	fs.IntVar(&c.ArchiveGzipLevel, "archive-gzip-level", 3, "gzip level of the WARC records, 1 (fastest) to 9 (smallest)")
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
