package cache

// clock is CLOCK (second chance) laid out as the paper suggests: the scatter
// table itself is the clock face. Each slot has a mark bit, set on a hit; on
// a miss in a full cache the hand sweeps the slots, clearing marks, and
// evicts the first unmarked entry. Cost per entry: 8 bytes of key plus two
// bits (used, mark), divided by the load factor.
//
// The circle's order is the table's (hash order) rather than insertion
// order, so a new entry lands at a random distance ahead of the hand. It
// starts marked: without that it would get on average half a revolution
// before being considered, instead of CLOCK's one.
type clock struct {
	t     table
	mark  bitset
	hand  uint64
	size  int
	stats Stats
}

func newClock(size int) *clock {
	t := newTable(size)
	return &clock{t: t, mark: newBitset(int(t.n)), size: size}
}

func (c *clock) Lookup(fp uint64) bool {
	c.stats.Lookups++
	i, ok := c.t.find(fp)
	if ok {
		c.mark.set(i)
		c.stats.Hits++
	}
	return ok
}

func (c *clock) Insert(fp uint64) {
	i, ok := c.t.find(fp)
	if ok {
		c.mark.set(i)
		return
	}
	if c.t.len == c.size {
		c.evict()
		i, _ = c.t.find(fp) // the eviction may have shifted fp's free slot
	}
	c.t.put(i, fp)
	c.mark.setTo(i, markNew)
	c.stats.Inserts++
}

// evict advances the hand to the first unmarked entry, clearing marks on the
// way, and removes it. The hand stays on the emptied slot: an entry shifted
// into it has not been looked at in this revolution yet.
func (c *clock) evict() {
	for {
		if c.t.used.get(c.hand) {
			if !c.mark.get(c.hand) {
				c.t.remove(c.hand, c.moved)
				c.stats.Evictions++
				return
			}
			c.mark.clear(c.hand)
		}
		c.hand = c.t.next(c.hand)
	}
}

// moved carries a shifted entry's mark along.
func (c *clock) moved(from, to uint64) { c.mark.setTo(to, c.mark.get(from)) }

func (c *clock) Len() int     { return c.t.len }
func (c *clock) Cap() int     { return c.size }
func (c *clock) Stats() Stats { return c.stats }

var markNew = true
