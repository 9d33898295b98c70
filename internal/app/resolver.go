package app

import (
	"context"
	"net"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/resolver"
)

// hostResolver is what the fetcher's dialer calls.
type hostResolver interface {
	LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error)
}

// systemResolver is Go's resolver (it reads /etc/hosts and search domains).
type systemResolver struct{}

func (systemResolver) LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// newResolver builds the fetcher's name resolver from cfg and exports its
// statistics.
func newResolver(cfg config.Config, reg prometheus.Registerer) (hostResolver, error) {
	if cfg.Resolver == "system" {
		return systemResolver{}, nil
	}
	o := resolver.DefaultOptions()
	o.Servers = cfg.DNSServers
	o.CacheSize = cfg.DNSCacheSize
	o.Refresh = cfg.DNSRefresh
	o.NegativeTTL = cfg.DNSNegativeTTL
	o.RespectTTL = !cfg.DNSIgnoreTTL
	r, err := resolver.New(o)
	if err != nil {
		return nil, err
	}
	if reg != nil {
		reg.MustRegister(resolverCollector{r})
	}
	return r, nil
}

// resolverCollector exports resolver.Stats.
type resolverCollector struct{ r *resolver.Resolver }

var (
	dnsLookups = prometheus.NewDesc("trawler_dns_lookups_total", "Name lookups by outcome (hit, negative_hit, miss, coalesced).", []string{"outcome"}, nil)
	dnsErrors  = prometheus.NewDesc("trawler_dns_errors_total", "Lookups that returned an error.", nil, nil)
	dnsQueries = prometheus.NewDesc("trawler_dns_queries_total", "DNS messages sent.", nil, nil)
	dnsEntries = prometheus.NewDesc("trawler_dns_cache_entries", "Names in the cache.", nil, nil)
	dnsLatency = prometheus.NewDesc("trawler_dns_lookup_seconds", "Latency of network lookups.", nil, nil)
)

func (resolverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dnsLookups, dnsErrors, dnsQueries, dnsEntries, dnsLatency} {
		ch <- d
	}
}

func (c resolverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.r.Stats()
	for outcome, n := range map[string]uint64{"hit": s.Hits, "negative_hit": s.NegativeHits, "miss": s.Misses, "coalesced": s.Coalesced} {
		ch <- prometheus.MustNewConstMetric(dnsLookups, prometheus.CounterValue, float64(n), outcome)
	}
	ch <- prometheus.MustNewConstMetric(dnsErrors, prometheus.CounterValue, float64(s.Errors))
	ch <- prometheus.MustNewConstMetric(dnsQueries, prometheus.CounterValue, float64(s.Queries))
	ch <- prometheus.MustNewConstMetric(dnsEntries, prometheus.GaugeValue, float64(s.Entries))
	buckets := map[float64]uint64{}
	for _, b := range s.Latency.Buckets {
		buckets[b.UpperBound.Seconds()] = b.Count
	}
	ch <- prometheus.MustNewConstHistogram(dnsLatency, s.Latency.Count, s.Latency.Sum.Seconds(), buckets)
}
