package cache

import (
	"math/bits"

	"github.com/trawlerhq/trawler/pkg/hugepages"
)

// index maps fingerprints to positions ("refs") in a caller's dense key
// array, for policies whose entries must stay put in an order of their own
// (CLOCK's face, LRU's list). It is open addressing with linear probing and
// backward-shift deletion over uint32 slots, at a load factor of at most 3/4:
// 4/(3/4) = 5.3 bytes per entry.
//
// A slot holds ref+1 in its low refBits bits (0 means empty) and, above them,
// a tag of the fingerprint's hash, so that a probe reads the key array only
// when the tag matches. Small caches get long tags (8 bits or more below 2^24
// entries); only huge ones are left with a few bits.
type index struct {
	slots   []uint32
	n       uint64
	refBits uint
	refMask uint32
}

func newIndex(size int) index {
	n := slotsFor(size)
	rb := uint(bits.Len(uint(size))) // ref+1 <= size < 2^rb
	// Slots are written at random from the first inserts: a large table
	// goes where the kernel may use huge pages (the parser's host splitter,
	// 500,000 entries, faulted in 650 small pages in a crawl's first second).
	return index{slots: hugepages.Uint32s(int(n)), n: uint64(n), refBits: rb, refMask: 1<<rb - 1}
}

// probe returns fp's home slot and its tag (low hash bits, unlike the high
// bits multiply-high maps to the home).
func (x *index) probe(fp uint64) (home uint64, tag uint32) {
	h := mix(fp)
	home, _ = bits.Mul64(h, x.n)
	return home, uint32(h) << x.refBits
}

func (x *index) next(i uint64) uint64    { return ringNext(i, x.n) }
func (x *index) dist(a, b uint64) uint64 { return ringDist(a, b, x.n) }

// find returns the slot holding fp (keys[ref] == fp) and its ref, or the free
// slot where fp would go and ok=false.
func (x *index) find(fp uint64, keys []uint64) (slot uint64, ref int32, ok bool) {
	i, tag := x.probe(fp)
	for s := x.slots[i]; s != 0; s = x.slots[i] {
		if s&^x.refMask == tag {
			r := int32(s&x.refMask) - 1
			if keys[r] == fp {
				return i, r, true
			}
		}
		i = x.next(i)
	}
	return i, 0, false
}

// put records that fp is at keys[ref], in the free slot i returned by find.
func (x *index) put(i uint64, fp uint64, ref int32) {
	_, tag := x.probe(fp)
	x.slots[i] = tag | uint32(ref+1)
}

// remove empties slot i and shifts later entries of its cluster back into
// the hole where their probe path allows, so no lookup meets a gap.
func (x *index) remove(i uint64, keys []uint64) {
	for j := x.next(i); x.slots[j] != 0; j = x.next(j) {
		home, _ := x.probe(keys[x.slots[j]&x.refMask-1])
		if x.dist(i, j) <= x.dist(home, j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
}
