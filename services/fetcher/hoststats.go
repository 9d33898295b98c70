package fetcher

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// hostStats counts outcomes per host, for the hosts that matter: a
// Prometheus label per host would be unbounded, so the collector exports the
// maxExportedHosts hosts with the most fetches, and the map itself forgets the
// quietest half when it grows past maxTrackedHosts.
type hostStats struct {
	mu    sync.Mutex
	hosts map[string]*hostCounts // guarded by mu
}

type hostCounts struct {
	fetches  uint64
	byStatus map[string]uint64 // "2xx" ... "5xx", or an error kind
	failures uint64            // fetches without a response
	lastErr  string            // the last failure's message
}

const (
	maxTrackedHosts  = 20000
	maxExportedHosts = 100
)

func newHostStats() *hostStats { return &hostStats{hosts: map[string]*hostCounts{}} }

// add counts an outcome of host; errMsg is set for a fetch without a
// response.
func (h *hostStats) add(host, outcome, errMsg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.hosts[host]
	if c == nil {
		if len(h.hosts) >= maxTrackedHosts {
			h.forgetQuietHalf()
		}
		c = &hostCounts{byStatus: map[string]uint64{}}
		h.hosts[host] = c
	}
	c.fetches++
	c.byStatus[outcome]++
	if errMsg != "" {
		c.failures++
		c.lastErr = errMsg
	}
}

// HostFailures is one host's failed fetches, for the end-of-crawl summary.
type HostFailures struct {
	Host      string
	Failures  uint64 // fetches without a response
	Fetches   uint64 // all fetches
	LastError string
}

// topFailing returns up to n hosts with the most failures, most first.
func (h *hostStats) topFailing(n int) []HostFailures {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []HostFailures
	for host, c := range h.hosts {
		if c.failures > 0 {
			out = append(out, HostFailures{Host: host, Failures: c.failures, Fetches: c.fetches, LastError: c.lastErr})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Failures != out[j].Failures {
			return out[i].Failures > out[j].Failures
		}
		return out[i].Host < out[j].Host
	})
	return out[:min(n, len(out))]
}

// forgetQuietHalf drops the half of the hosts with the fewest fetches.
// mu must be held.
func (h *hostStats) forgetQuietHalf() {
	counts := make([]uint64, 0, len(h.hosts))
	for _, c := range h.hosts {
		counts = append(counts, c.fetches)
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i] < counts[j] })
	median := counts[len(counts)/2]
	for host, c := range h.hosts {
		if c.fetches <= median {
			delete(h.hosts, host)
		}
	}
}

var hostOutcomes = prometheus.NewDesc("trawler_fetcher_host_outcomes_total",
	"Fetch outcomes (status class or error kind) of the busiest hosts.", []string{"host", "outcome"}, nil)

func (h *hostStats) Describe(ch chan<- *prometheus.Desc) { ch <- hostOutcomes }

func (h *hostStats) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(h.hosts))
	for n := range h.hosts {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return h.hosts[names[i]].fetches > h.hosts[names[j]].fetches })
	for _, n := range names[:min(len(names), maxExportedHosts)] {
		for outcome, v := range h.hosts[n].byStatus {
			ch <- prometheus.MustNewConstMetric(hostOutcomes, prometheus.CounterValue, float64(v), n, outcome)
		}
	}
}
