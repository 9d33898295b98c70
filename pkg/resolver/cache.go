package resolver

import (
	"net/netip"
	"time"
)

// entry is one cached answer: addresses, or a failure (a negative entry).
type entry struct {
	addrs   []netip.Addr // nil for a negative entry
	fail    *failure     // non-nil for a negative entry
	expires time.Time    // the entry answers lookups until then
}

// node is one slot of the name cache. prev and next link it into the
// recency list; the node itself is reused when the cache is full.
type node struct {
	key        string
	val        entry
	prev, next *node
}

// lru is the paper's name cache: a hash table (Go map) finds a node, and an
// intrusive doubly linked list keeps nodes in recency order, most recent at
// head. When full, the tail node is unlinked and reused for the new name, so
// a full cache allocates no nodes.
//
// lru is not safe for concurrent use: Resolver.mu guards it.
type lru struct {
	capacity   int
	items      map[string]*node
	head, tail *node
}

func newLRU(capacity int) *lru {
	return &lru{capacity: capacity, items: make(map[string]*node)}
}

// get returns the node for key, moving it to the front (a hit or a stale hit:
// either way the name was just asked for).
func (c *lru) get(key string) (*node, bool) {
	n, ok := c.items[key]
	if ok {
		c.moveToFront(n)
	}
	return n, ok
}

// put stores val under key at the front, reusing the tail node when full.
func (c *lru) put(key string, val entry) {
	if n, ok := c.items[key]; ok {
		n.val = val
		c.moveToFront(n)
		return
	}
	var n *node
	if len(c.items) >= c.capacity {
		n = c.tail
		c.unlink(n)
		delete(c.items, n.key)
	} else {
		n = new(node)
	}
	n.key, n.val = key, val
	c.pushFront(n)
	c.items[key] = n
}

func (c *lru) len() int { return len(c.items) }

// keys lists names from most to least recently used (for tests).
func (c *lru) keys() []string {
	var out []string
	for n := c.head; n != nil; n = n.next {
		out = append(out, n.key)
	}
	return out
}

func (c *lru) moveToFront(n *node) {
	if c.head == n {
		return
	}
	c.unlink(n)
	c.pushFront(n)
}

func (c *lru) pushFront(n *node) {
	n.prev, n.next = nil, c.head
	if c.head != nil {
		c.head.prev = n
	}
	c.head = n
	if c.tail == nil {
		c.tail = n
	}
}

func (c *lru) unlink(n *node) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		c.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		c.tail = n.prev
	}
	n.prev, n.next = nil, nil
}
