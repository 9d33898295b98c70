package resolver

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a Resolver's counters. Counters only grow; Entries
// and InFlight are gauges.
//
// Every LookupNetIP call counts once in Lookups and, unless the host was an IP
// literal or a malformed name, once in exactly one of Hits, NegativeHits,
// Misses and Coalesced.
type Stats struct {
	Lookups      uint64 // LookupNetIP calls
	Hits         uint64 // answered from a fresh cached address list
	NegativeHits uint64 // answered from a fresh cached failure
	Misses       uint64 // started a network lookup: name absent, or cached but expired
	Refreshes    uint64 // the part of Misses where the name was cached but expired
	Coalesced    uint64 // waited for a network lookup of the same name already in flight
	Errors       uint64 // calls that returned an error, whatever the cause
	Queries      uint64 // DNS messages sent: A and AAAA, retries, TCP retries after truncation

	Entries  int // names in the cache now
	InFlight int // network lookups (names) in flight now

	// Latency of network lookups (A and AAAA in parallel, with retries),
	// lookups abandoned by all their callers excluded.
	Latency Histogram
}

// Histogram summarizes durations. Buckets are cumulative, as Prometheus
// expects: Buckets[i].Count lookups took at most Buckets[i].UpperBound; Count
// includes the ones slower than the last bound.
type Histogram struct {
	Count   uint64
	Sum     time.Duration
	Max     time.Duration
	Buckets []Bucket
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	UpperBound time.Duration
	Count      uint64
}

// latencyBounds spans loopback answers to the slowest timeouts.
var latencyBounds = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// counters are updated with atomics so that no lock is needed on the hot path.
type counters struct {
	lookups, hits, negHits, misses, refreshes, coalesced, errors, queries atomic.Uint64
	inFlight                                                              atomic.Int64

	latCount, latSum, latMax atomic.Int64
	latBuckets               [len(latencyBounds)]atomic.Uint64 // not cumulative
}

func (c *counters) observe(d time.Duration) {
	c.latCount.Add(1)
	c.latSum.Add(int64(d))
	for {
		old := c.latMax.Load()
		if int64(d) <= old || c.latMax.CompareAndSwap(old, int64(d)) {
			break
		}
	}
	for i, b := range latencyBounds {
		if d <= b {
			c.latBuckets[i].Add(1)
			break
		}
	}
}

func (c *counters) snapshot() Stats {
	// Buckets before Count: observe adds to Count first, so the snapshot
	// never has a bucket above Count (Prometheus rejects that).
	var h Histogram
	var cum uint64
	for i, b := range latencyBounds {
		cum += c.latBuckets[i].Load()
		h.Buckets = append(h.Buckets, Bucket{UpperBound: b, Count: cum})
	}
	h.Count = uint64(c.latCount.Load())
	h.Sum = time.Duration(c.latSum.Load())
	h.Max = time.Duration(c.latMax.Load())
	return Stats{
		Lookups:      c.lookups.Load(),
		Hits:         c.hits.Load(),
		NegativeHits: c.negHits.Load(),
		Misses:       c.misses.Load(),
		Refreshes:    c.refreshes.Load(),
		Coalesced:    c.coalesced.Load(),
		Errors:       c.errors.Load(),
		Queries:      c.queries.Load(),
		InFlight:     int(c.inFlight.Load()),
		Latency:      h,
	}
}
