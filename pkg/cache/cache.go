// Package cache holds small in-process caches of 64-bit URL fingerprints that
// sit in front of the dedup store (Broder, Najork, Wiener, "Efficient URL
// Caching for World Wide Web Crawling", WWW 2003). A hit means "seen before":
// the URL is dropped without a store round trip. A miss says nothing; the
// caller asks the store and then calls Insert.
//
// Policies: CLOCK (the default), LRU, RANDOM and STATIC. The cache study's
// simulator (internal/cachestudy/sim) replays recorded traces through them
// beside the INFINITE and MIN (Belady) bounds. Every cache is a few
// flat arrays allocated once for its capacity, with no per-entry heap
// objects: RANDOM and STATIC a scatter table (table.go), CLOCK and LRU a dense
// array of entries and an index (index.go). docs/cache.md gives bytes per
// entry and hit rates.
//
// A Cache is not safe for concurrent use: the dedup service keeps one per
// partition goroutine, so the hot path takes no lock. Wrap a cache with
// NewSynchronized to share it between goroutines.
package cache

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Cache is a set of recently or frequently seen fingerprints of bounded size.
type Cache interface {
	// Lookup reports whether fp is in the cache and records the use for
	// the replacement policy. For the dynamic policies a hit means fp was
	// inserted before; for STATIC it means fp is in the preloaded set.
	Lookup(fp uint64) bool
	// Insert adds fp, typically after a miss was resolved against the
	// store, evicting an entry per policy when the cache is full. Inserting
	// a fingerprint already present only records a use.
	Insert(fp uint64)
	// Len is the number of fingerprints held, never more than Cap.
	Len() int
	// Cap is the maximum number of fingerprints held.
	Cap() int
	// Stats returns the counters since the cache was made.
	Stats() Stats
}

// Stats counts a cache's operations.
type Stats struct {
	Lookups   uint64 // calls to Lookup
	Hits      uint64 // lookups that found their fingerprint
	Inserts   uint64 // fingerprints added (not counting ones already present)
	Evictions uint64 // fingerprints removed to make room
}

// Misses is the number of lookups that did not hit.
func (s Stats) Misses() uint64 { return s.Lookups - s.Hits }

// HitRate is Hits/Lookups, 0 before the first lookup.
func (s Stats) HitRate() float64 {
	if s.Lookups == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Lookups)
}

// Policy names accepted by New.
const (
	Clock  = "clock"
	LRU    = "lru"
	Random = "random"
	Static = "static"
)

// MaxSize bounds a cache's capacity: slot indices are int32, and a billion
// entries is already gigabytes.
const MaxSize = 1 << 30

// ErrStaticNeedsSet is returned by New for the static policy, whose content
// is fixed when it is made: use NewStatic or LoadStatic.
var ErrStaticNeedsSet = errors.New("cache: the static policy needs its fingerprint set: use NewStatic or LoadStatic")

// New returns an empty cache of the given policy ("clock" when empty; case
// does not matter) holding at most size fingerprints.
func New(policy string, size int) (Cache, error) {
	if size < 1 || size > MaxSize {
		return nil, fmt.Errorf("cache: size %d out of range [1, %d]", size, MaxSize)
	}
	switch strings.ToLower(policy) {
	case "", Clock:
		return newClock(size), nil
	case LRU:
		return newLRU(size), nil
	case Random:
		return newRandom(size, 1), nil
	case Static:
		return nil, ErrStaticNeedsSet
	}
	return nil, fmt.Errorf("cache: unknown policy %q (want clock, lru, random or static)", policy)
}

// NewSynchronized wraps c so that its methods may be called from several
// goroutines, at the price of a mutex per call.
func NewSynchronized(c Cache) Cache {
	if s, ok := c.(*synchronized); ok {
		return s
	}
	return &synchronized{c: c}
}

type synchronized struct {
	mu sync.Mutex
	c  Cache
}

func (s *synchronized) Lookup(fp uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Lookup(fp)
}

func (s *synchronized) Insert(fp uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.Insert(fp)
}

func (s *synchronized) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Len()
}

func (s *synchronized) Cap() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Cap()
}

func (s *synchronized) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Stats()
}
