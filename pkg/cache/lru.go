package cache

// lru is exact LRU with flat arrays: the scatter table is the index, and
// prev/next are int32 slot numbers parallel to it forming a doubly linked
// recency list (head = most recent). No container/list, no pointers: 8 bytes
// of key, 8 of links and the used bit per slot, divided by the load factor.
// When deletion shifts an entry to another slot, its neighbours are relinked.
type lru struct {
	t          table
	prev, next []int32
	head, tail int32 // nilSlot when empty
	size       int
	stats      Stats
}

const nilSlot = -1

func newLRU(size int) *lru {
	t := newTable(size)
	return &lru{
		t:    t,
		prev: make([]int32, t.n),
		next: make([]int32, t.n),
		head: nilSlot,
		tail: nilSlot,
		size: size,
	}
}

func (c *lru) Lookup(fp uint64) bool {
	c.stats.Lookups++
	i, ok := c.t.find(fp)
	if ok {
		c.stats.Hits++
		c.toFront(int32(i))
	}
	return ok
}

func (c *lru) Insert(fp uint64) {
	i, ok := c.t.find(fp)
	if ok {
		c.toFront(int32(i))
		return
	}
	if c.t.len == c.size {
		c.evict()
		i, _ = c.t.find(fp)
	}
	c.t.put(i, fp)
	c.pushFront(int32(i))
	c.stats.Inserts++
}

// evict removes the least recently used entry, the list's tail.
func (c *lru) evict() {
	i := c.tail
	c.unlink(i)
	c.t.remove(uint64(i), c.moved)
	c.stats.Evictions++
}

func (c *lru) toFront(i int32) {
	if c.head == i {
		return
	}
	c.unlink(i)
	c.pushFront(i)
}

func (c *lru) pushFront(i int32) {
	c.prev[i] = nilSlot
	c.next[i] = c.head
	if c.head != nilSlot {
		c.prev[c.head] = i
	} else {
		c.tail = i
	}
	c.head = i
}

func (c *lru) unlink(i int32) {
	p, n := c.prev[i], c.next[i]
	if p != nilSlot {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n != nilSlot {
		c.prev[n] = p
	} else {
		c.tail = p
	}
}

// moved relinks an entry that deletion shifted from slot from to slot to.
func (c *lru) moved(from, to uint64) {
	f, t := int32(from), int32(to)
	p, n := c.prev[f], c.next[f]
	c.prev[t], c.next[t] = p, n
	if p != nilSlot {
		c.next[p] = t
	} else {
		c.head = t
	}
	if n != nilSlot {
		c.prev[n] = t
	} else {
		c.tail = t
	}
}

func (c *lru) Len() int     { return c.t.len }
func (c *lru) Cap() int     { return c.size }
func (c *lru) Stats() Stats { return c.stats }
