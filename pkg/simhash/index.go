package simhash

import "fmt"

// Index finds, among the fingerprints added to it, one within a distance d
// of a query, without comparing the query to every entry.
//
// Manku et al.'s observation: split the 64 bits into d+1 blocks; two
// fingerprints that differ in at most d bits agree exactly on at least one
// block (pigeonhole). The index keeps one table per block, keyed by that
// block's bits; a query looks only at the entries sharing one of its blocks.
// For unrelated fingerprints a 16-bit block (d = 3) matches one entry in
// 65,536; at the default d = 10, eleven blocks of 5 or 6 bits make a lookup
// read about a fifth of the entries, which a bounded per-host index affords.
//
// An Index holds at most its capacity; adding past it forgets the oldest
// entry, so the memory of a long or continuous crawl stays bounded. It is not
// safe for concurrent use.
type Index struct {
	distance int
	blocks   []block
	tables   []map[uint64][]int32 // per block: block bits -> slots
	entries  []entry              // ring of slots
	next     int                  // slot the next Add writes
	max      int                  // capacity
}

type block struct {
	shift uint
	mask  uint64
}

type entry struct {
	fp uint64
	id string
}

// MaxDistance is the largest distance an Index serves: past it, blocks of
// fewer than 4 bits match a sixteenth of all entries each, and a lookup
// reads nearly the whole index.
const MaxDistance = 15

// NewIndex returns an index that finds fingerprints within distance bits
// (0 to MaxDistance; DefaultDistance is the usual choice) and holds at most
// capacity entries.
func NewIndex(distance, capacity int) (*Index, error) {
	if distance < 0 || distance > MaxDistance {
		return nil, fmt.Errorf("simhash: distance %d out of range: use 0 to %d bits", distance, MaxDistance)
	}
	if capacity < 1 {
		return nil, fmt.Errorf("simhash: capacity %d: an index holds at least one fingerprint", capacity)
	}
	n := distance + 1
	x := &Index{
		distance: distance,
		blocks:   make([]block, n),
		tables:   make([]map[uint64][]int32, n),
		// The ring grows to capacity as entries come: a per-host index
		// of a small site stays small.
		entries: make([]entry, 0, min(capacity, 64)),
		max:     capacity,
	}
	for i := range n {
		lo, hi := i*64/n, (i+1)*64/n
		x.blocks[i] = block{shift: uint(lo), mask: 1<<uint(hi-lo) - 1}
		x.tables[i] = make(map[uint64][]int32)
	}
	return x, nil
}

// Len is the number of fingerprints held.
func (x *Index) Len() int { return len(x.entries) }

// Nearest returns the id of the closest fingerprint within the index's
// distance of fp, and that distance; ok is false when there is none. Among
// equally close entries it returns the earliest added.
func (x *Index) Nearest(fp uint64) (id string, distance int, ok bool) {
	best, bestSlot := x.distance+1, int32(-1)
	for i, b := range x.blocks {
		for _, slot := range x.tables[i][(fp>>b.shift)&b.mask] {
			d := Distance(fp, x.entries[slot].fp)
			if d < best || d == best && d <= x.distance && x.older(slot, bestSlot) {
				best, bestSlot = d, slot
			}
		}
	}
	if bestSlot < 0 {
		return "", 0, false
	}
	return x.entries[bestSlot].id, best, true
}

// older reports whether slot a was added before slot b (b < 0: none yet).
func (x *Index) older(a, b int32) bool {
	if b < 0 {
		return true
	}
	// Slots at or after next were written in the previous lap of the ring.
	age := func(s int32) int {
		if int(s) >= x.next {
			return int(s) - x.next
		}
		return int(s) + len(x.entries) - x.next
	}
	return age(a) < age(b)
}

// Add records fp under id, forgetting the oldest entry when the index is
// full.
func (x *Index) Add(fp uint64, id string) {
	var slot int32
	if len(x.entries) < x.max {
		slot = int32(len(x.entries))
		x.entries = append(x.entries, entry{fp: fp, id: id})
		x.next = (int(slot) + 1) % x.max
	} else {
		slot = int32(x.next)
		x.unlink(slot)
		x.entries[slot] = entry{fp: fp, id: id}
		x.next = (x.next + 1) % len(x.entries)
	}
	for i, b := range x.blocks {
		key := (fp >> b.shift) & b.mask
		x.tables[i][key] = append(x.tables[i][key], slot)
	}
}

// unlink removes slot from every table before it is reused.
func (x *Index) unlink(slot int32) {
	fp := x.entries[slot].fp
	for i, b := range x.blocks {
		key := (fp >> b.shift) & b.mask
		slots := x.tables[i][key]
		for j, s := range slots {
			if s == slot {
				slots[j] = slots[len(slots)-1]
				slots = slots[:len(slots)-1]
				break
			}
		}
		if len(slots) == 0 {
			delete(x.tables[i], key)
		} else {
			x.tables[i][key] = slots
		}
	}
}
