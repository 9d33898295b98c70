package cache

// clock is CLOCK (second chance) as the paper describes it: the face is a
// flat array of fingerprints with a mark bit each, in the order they were
// placed, and an index table finds a fingerprint's position. A hit sets the
// mark. A miss in a full cache moves the hand forward, clearing marks, to the
// first unmarked entry, which is replaced by the new fingerprint (unmarked);
// the hand then moves past it, so a new entry gets one full revolution to be
// used again. Cost per entry: 8 bytes of key, 1 mark bit, 5.3 bytes of index.
//
// The face is separate from the hash table on purpose: with the table itself
// as the face, evictions cluster behind the hand while inserts land
// anywhere, so the slots ahead of the hand fill up and linear probing there
// degrades badly (measured: over 10x slower at 50,000 entries on the
// link stream of internal/linkstream).
type clock struct {
	keys  []uint64 // the face; grows to size, then entries are replaced in place
	mark  bitset
	idx   index
	hand  int
	size  int
	stats Stats
}

func newClock(size int) *clock {
	return &clock{
		keys: make([]uint64, 0, size),
		mark: newBitset(size),
		idx:  newIndex(size),
		size: size,
	}
}

func (c *clock) Lookup(fp uint64) bool {
	c.stats.Lookups++
	_, ref, ok := c.idx.find(fp, c.keys)
	if ok {
		c.mark.set(uint64(ref))
		c.stats.Hits++
	}
	return ok
}

func (c *clock) Insert(fp uint64) {
	i, ref, ok := c.idx.find(fp, c.keys)
	if ok {
		c.mark.set(uint64(ref))
		return
	}
	if len(c.keys) < c.size {
		c.keys = append(c.keys, fp)
		c.idx.put(i, fp, int32(len(c.keys)-1))
		c.stats.Inserts++
		return
	}
	c.replace(fp)
	c.stats.Inserts++
}

// replace evicts the entry under the hand once the hand reaches an unmarked
// one, and puts fp in its place.
func (c *clock) replace(fp uint64) {
	for c.mark.get(uint64(c.hand)) {
		c.mark.clear(uint64(c.hand))
		c.advance()
	}
	victim, _, _ := c.idx.find(c.keys[c.hand], c.keys)
	c.idx.remove(victim, c.keys)
	c.stats.Evictions++

	c.keys[c.hand] = fp
	i, _, _ := c.idx.find(fp, c.keys)
	c.idx.put(i, fp, int32(c.hand))
	c.advance()
}

func (c *clock) advance() {
	c.hand++
	if c.hand == c.size {
		c.hand = 0
	}
}

func (c *clock) Len() int     { return len(c.keys) }
func (c *clock) Cap() int     { return c.size }
func (c *clock) Stats() Stats { return c.stats }
