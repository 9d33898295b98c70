package cache

// lru is exact LRU in flat arrays: keys, and prev/next int32 positions
// forming a doubly linked recency list (head = most recent), plus an index
// table from fingerprint to position. No container/list, no pointers. Cost
// per entry: 8 bytes of key, 8 of links, 5.3 of index. A full cache reuses
// the tail's position for the new fingerprint.
type lru struct {
	keys       []uint64
	prev, next []int32
	idx        index
	head, tail int32 // nilRef when empty
	size       int
	stats      Stats
}

const nilRef = -1

func newLRU(size int) *lru {
	return &lru{
		keys: make([]uint64, 0, size),
		prev: make([]int32, size),
		next: make([]int32, size),
		idx:  newIndex(size),
		head: nilRef,
		tail: nilRef,
		size: size,
	}
}

func (c *lru) Lookup(fp uint64) bool {
	c.stats.Lookups++
	_, ref, ok := c.idx.find(fp, c.keys)
	if ok {
		c.stats.Hits++
		c.toFront(ref)
	}
	return ok
}

func (c *lru) Insert(fp uint64) {
	i, ref, ok := c.idx.find(fp, c.keys)
	if ok {
		c.toFront(ref)
		return
	}
	c.stats.Inserts++
	if len(c.keys) < c.size {
		c.keys = append(c.keys, fp)
		ref = int32(len(c.keys) - 1)
		c.idx.put(i, fp, ref)
		c.pushFront(ref)
		return
	}
	ref = c.evict()
	c.keys[ref] = fp
	i, _, _ = c.idx.find(fp, c.keys)
	c.idx.put(i, fp, ref)
	c.pushFront(ref)
}

// evict drops the least recently used entry, the tail, and returns its
// position for reuse.
func (c *lru) evict() int32 {
	ref := c.tail
	c.unlink(ref)
	i, _, _ := c.idx.find(c.keys[ref], c.keys)
	c.idx.remove(i, c.keys)
	c.stats.Evictions++
	return ref
}

func (c *lru) toFront(ref int32) {
	if c.head != ref {
		c.unlink(ref)
		c.pushFront(ref)
	}
}

func (c *lru) pushFront(ref int32) {
	c.prev[ref] = nilRef
	c.next[ref] = c.head
	if c.head != nilRef {
		c.prev[c.head] = ref
	} else {
		c.tail = ref
	}
	c.head = ref
}

func (c *lru) unlink(ref int32) {
	p, n := c.prev[ref], c.next[ref]
	if p != nilRef {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n != nilRef {
		c.prev[n] = p
	} else {
		c.tail = p
	}
}

func (c *lru) Len() int     { return len(c.keys) }
func (c *lru) Cap() int     { return c.size }
func (c *lru) Stats() Stats { return c.stats }
