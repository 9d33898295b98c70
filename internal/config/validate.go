package config

// Validate: every invalid setting, reported at once.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/trawlerhq/trawler/pkg/redact"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/services/parser"
)

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
	if c.SitemapGuess && !c.Sitemaps {
		errs = append(errs, errors.New("--sitemap-guess reads sitemaps: add --sitemaps"))
	}
	if _, err := c.RevisitSchedule(); err != nil {
		errs = append(errs, err)
	}
	if c.Continuous() && c.MaxPagesPerHost != 0 && c.MaxPagesPerHost != DefaultMaxPagesPerHost {
		errs = append(errs, fmt.Errorf("--max-pages-per-host %d with --revisit-max: a continuous crawl has no per-host budget (every visit would spend it); bound hosts with --max-queue-per-host and the trap limits", c.MaxPagesPerHost))
	}
	if c.NearDuplicates {
		nd := parser.NearDuplicates{Distance: c.NearDuplicateDistance, PerHost: c.NearDuplicateWindow, Hosts: parser.DefaultNearDuplicateHosts}
		if err := nd.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.FetchWorkers < 1 || c.ParseWorkers < 1 {
		errs = append(errs, errors.New("--fetch-workers and --parse-workers must be at least 1"))
	}
	if c.FetchBacklog < 0 {
		errs = append(errs, fmt.Errorf("--fetch-backlog %d: must be 0 (no limit) or more", c.FetchBacklog))
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
	if c.ArchiveGzipLevel < 0 || c.ArchiveGzipLevel > 9 { // 0: the writer's default
		errs = append(errs, fmt.Errorf("--archive-gzip-level %d: want 1 (fastest) to 9 (smallest)", c.ArchiveGzipLevel))
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
