package cache

import "math/bits"

// random is RANDOM replacement in the scatter table with no per-entry state
// at all, as the paper notes it can be: 8 bytes of key plus the used bit,
// divided by the load factor. A victim is a uniformly random entry: draw
// random slots until one is in use (a full cache fills about 3/4 of the
// table, so about 1.33 draws on average).
type random struct {
	t     table
	rng   splitmix
	size  int
	stats Stats
}

func newRandom(size int, seed uint64) *random {
	return &random{t: newTable(size), rng: splitmix(seed), size: size}
}

func (c *random) Lookup(fp uint64) bool {
	c.stats.Lookups++
	_, ok := c.t.find(fp)
	if ok {
		c.stats.Hits++
	}
	return ok
}

func (c *random) Insert(fp uint64) {
	i, ok := c.t.find(fp)
	if ok {
		return
	}
	if c.t.len == c.size {
		c.evict()
		i, _ = c.t.find(fp)
	}
	c.t.put(i, fp)
	c.stats.Inserts++
}

func (c *random) evict() {
	for {
		i, _ := bits.Mul64(c.rng.next(), c.t.n)
		if c.t.used.get(i) {
			c.t.remove(i)
			c.stats.Evictions++
			return
		}
	}
}

func (c *random) Len() int     { return c.t.len }
func (c *random) Cap() int     { return c.size }
func (c *random) Stats() Stats { return c.stats }

// splitmix is SplitMix64: tiny state, fast, good enough to pick victims, and
// deterministic for a seed so that runs are reproducible.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
