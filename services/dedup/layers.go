package dedup

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/trawlerhq/trawler/pkg/cache"
	"github.com/trawlerhq/trawler/pkg/hugepages"
)

// layers are a partition's two filters in front of the seen set, after
// Broder, Najork and Wiener: a small cache of recent fingerprints (a hit is a
// duplicate, no I/O) and a Bloom filter over every fingerprint of the
// partition ("absent" is new for certain, but only once the filter is
// complete; "maybe" is asked of the seen set).
type layers struct {
	cache cache.Cache // only the partition's loop touches it

	mu       sync.Mutex // guards bloom, complete and the fill: the warm-up writes concurrently
	bloom    *bloom.BloomFilter
	complete bool
	// The fill as last counted, and when (see fillEvery).
	filled   float64
	filledAt time.Time
	// added counts the fingerprints added: a filter none was added to is
	// empty, and counting its bits would fault in every page of a freshly
	// allocated bit set (megabytes) under mu, holding the partition's
	// first batch tens of milliseconds at a crawl's start.
	added int
}

// fillEvery is how long a count of the Bloom filter's set bits is reused:
// a count reads the whole bit array (megabytes), holding the lock the
// partition's lookups take, and the metrics are read every second (by the
// heartbeat): counting at each read took 2 % of `run`'s CPU.
const fillEvery = 10 * time.Second

func newLayers(c cache.Cache, expected uint, fpRate float64) *layers {
	return &layers{cache: c, bloom: bloom.NewWithEstimates(max(expected, 1024), fpRate)}
}

// bloomArena holds every partition's first Bloom filter in one array that
// the kernel may back with huge pages (pkg/hugepages): a filter's bits are
// set at random from its first adds, and 32 filters of 374 KB (the
// defaults) faulted in ~3,000 small pages in a crawl's first second.
type bloomArena struct {
	mu    sync.Mutex
	words []uint64 // partitions x per, allocated at the first filter
	per   int
	taken []bool // by partition: its slice is in use (a restarted partition gets a filter of its own)
}

// filter returns a Bloom filter of m bits and k hashes for partition p of
// count: its slice of the arena the first time, a new filter after that.
func (a *bloomArena) filter(p, count int, m, k uint) *bloom.BloomFilter {
	per := int((m + 63) / 64)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.words == nil {
		a.words, a.per, a.taken = hugepages.Uint64s(per*count), per, make([]bool, count)
	}
	if p < 0 || p >= len(a.taken) || a.taken[p] || per != a.per {
		return bloom.New(m, k)
	}
	a.taken[p] = true
	return bloom.FromWithM(a.words[p*per:(p+1)*per:(p+1)*per], m, k)
}

// verdicts of classify.
const (
	verdictMaybe = iota // ask the seen set
	verdictSeen         // cache hit: a duplicate
	verdictNew          // Bloom filter says absent, and it is complete: new
)

// classify decides what it can for each unique fingerprint without I/O.
func (l *layers) classify(fps []uint64, st *Stats) map[uint64]int {
	out := make(map[uint64]int, len(fps))
	var missed []uint64
	for _, fp := range fps {
		if _, dup := out[fp]; dup {
			continue
		}
		if l.cache.Lookup(fp) {
			out[fp] = verdictSeen
			st.CacheHits.Add(1)
			continue
		}
		out[fp] = verdictMaybe
		missed = append(missed, fp)
	}
	var buf [8]byte
	l.mu.Lock()
	if l.complete {
		for _, fp := range missed {
			if !l.bloom.Test(fpBytes(&buf, fp)) {
				out[fp] = verdictNew
				st.BloomAbsent.Add(1)
			} else {
				st.BloomMaybe.Add(1)
			}
		}
	} else {
		st.BloomCold.Add(int64(len(missed)))
	}
	l.mu.Unlock()
	return out
}

// learn records the outcome of a batch: every fingerprint decided without a
// cache hit goes into the cache, new ones into the Bloom filter too.
func (l *layers) learn(decided map[uint64]int, fresh []uint64) {
	for fp, v := range decided {
		if v != verdictSeen {
			l.cache.Insert(fp)
		}
	}
	var buf [8]byte
	l.mu.Lock()
	for _, fp := range fresh {
		l.bloom.Add(fpBytes(&buf, fp))
	}
	l.added += len(fresh)
	l.mu.Unlock()
}

// warm fills the Bloom filter from the seen set; until it returns, every
// cache miss goes to the seen set. Fingerprints recorded meanwhile are added
// by learn, so the filter is complete when the scan ends.
func (l *layers) warm(ctx context.Context, scan func(ctx context.Context, fn func([]uint64) error) error) (int, time.Duration, error) {
	start := time.Now()
	n := 0
	var buf [8]byte
	err := scan(ctx, func(fps []uint64) error {
		l.mu.Lock()
		for _, fp := range fps {
			l.bloom.Add(fpBytes(&buf, fp))
		}
		l.added += len(fps)
		l.mu.Unlock()
		n += len(fps)
		return nil
	})
	if err != nil {
		return n, time.Since(start), err
	}
	l.mu.Lock()
	l.complete = true
	l.mu.Unlock()
	return n, time.Since(start), nil
}

// fill reports the Bloom filter's share of set bits and its estimated
// false-positive rate at that fill, as counted at most fillEvery before now.
func (l *layers) fill(now time.Time) (ratio, fpRate float64, complete bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.added > 0 && (l.filledAt.IsZero() || now.Sub(l.filledAt) >= fillEvery) {
		l.filled = float64(l.bloom.BitSet().Count()) / float64(l.bloom.Cap())
		l.filledAt = now
	}
	k := float64(l.bloom.K())
	ratio = l.filled
	fpRate = 1
	for i := 0.0; i < k; i++ {
		fpRate *= ratio
	}
	return ratio, fpRate, l.complete
}

func fpBytes(buf *[8]byte, fp uint64) []byte {
	for i := 7; i >= 0; i-- {
		buf[i] = byte(fp)
		fp >>= 8
	}
	return buf[:]
}

// confirmedStatic adapts a STATIC cache to dedup: the preloaded set (the
// most frequent fingerprints of an earlier crawl) says which URLs are worth a
// cache slot, not that this crawl has seen them, so a member is a hit only
// once it has been resolved here. A hit on first sight would drop a new URL.
// Safe for concurrent use: the partitions share it.
type confirmedStatic struct {
	set cache.Cache // read-only after load

	mu   sync.Mutex
	seen map[uint64]struct{} // members resolved in this crawl; guarded by mu
}

func newConfirmedStatic(set cache.Cache) *confirmedStatic {
	return &confirmedStatic{set: cache.NewSynchronized(set), seen: map[uint64]struct{}{}}
}

func (c *confirmedStatic) Lookup(fp uint64) bool {
	c.mu.Lock()
	_, ok := c.seen[fp]
	c.mu.Unlock()
	return ok
}

func (c *confirmedStatic) Insert(fp uint64) {
	if !c.set.Lookup(fp) {
		return // not a member: STATIC never changes
	}
	c.mu.Lock()
	c.seen[fp] = struct{}{}
	c.mu.Unlock()
}

func (c *confirmedStatic) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *confirmedStatic) Cap() int           { return c.set.Cap() }
func (c *confirmedStatic) Stats() cache.Stats { return c.set.Stats() }

// loadStatic reads the static policy's fingerprints, shared by partitions.
func (s *Service) loadStatic() error {
	o := s.o
	if o.CachePolicy != "static" {
		return nil
	}
	f, err := os.Open(o.StaticFile)
	if err != nil {
		return fmt.Errorf("static cache file: %w", err)
	}
	defer f.Close()
	c, err := cache.LoadStatic(f, o.CacheSize)
	if err != nil {
		return fmt.Errorf("static cache file %s: %w", o.StaticFile, err)
	}
	s.static = newConfirmedStatic(c)
	return nil
}

// newPartitionLayers builds partition p's cache and Bloom filter (in the
// replica's arena, see bloomArena). The cache
// budget is split over the static partitions, or over all P partitions when
// ownership is dynamic (a replica owning everything gets all of it).
func (s *Service) newPartitionLayers(p int) (*layers, error) {
	o := s.o
	share := len(o.Partitions)
	if o.Join != nil {
		share = o.PartitionCount
	}
	per := max(o.CacheSize/max(share, 1), 16)
	expected := uint(max(o.ExpectedURLs/max(o.PartitionCount, 1), 1))
	c := s.static
	if c == nil {
		var err error
		if c, err = cache.New(cmpOr(o.CachePolicy, "clock"), per); err != nil {
			return nil, err
		}
	}
	m, k := bloom.EstimateParameters(max(expected, 1024), o.BloomFP)
	return &layers{cache: c, bloom: s.blooms.filter(p, max(o.PartitionCount, 1), m, k)}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Service) bloomFill() (ratio, fpRate float64) {
	// The layers are counted outside s.mu, which every batch takes.
	s.mu.Lock()
	ls := make([]*layers, 0, len(s.layers))
	for _, l := range s.layers {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	if len(ls) == 0 {
		return 0, 0
	}
	now := time.Now()
	for _, l := range ls {
		r, f, _ := l.fill(now)
		ratio += r
		fpRate += f
	}
	n := float64(len(ls))
	return ratio / n, fpRate / n
}
