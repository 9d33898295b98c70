package cache

import "math/bits"

// table is a scatter table in the paper's sense: an open-addressing hash
// table of fingerprints in one flat array, whose probe sequences wrap around
// its end, with linear probing and backward-shift deletion (no tombstones,
// so it never needs rebuilding). RANDOM and STATIC
// keep their entries in it and nothing else: 8 bytes plus a used bit per
// slot. It suits policies that evict at random hash positions; CLOCK and LRU
// use a dense array and an index instead (see clock.go).
//
// The table is sized once for its capacity at a load factor of at most 3/4,
// and always has a free slot, which ends every probe sequence.
type table struct {
	keys []uint64
	used bitset // slot holds an entry (any fingerprint, 0 included, is valid)
	n    uint64 // number of slots
	len  int
}

// slotsFor is the number of slots for size entries: load <= 3/4, >= 1 free.
func slotsFor(size int) int { return size + size/3 + 1 }

func newTable(size int) table {
	n := slotsFor(size)
	return table{keys: make([]uint64, n), used: newBitset(n), n: uint64(n)}
}

// home is fp's preferred slot. Fingerprints are mixed first so that callers
// may use any 64-bit values (sequential test keys included), then mapped onto
// [0, n) by multiply-high, which needs no power-of-two table size.
func (t *table) home(fp uint64) uint64 {
	hi, _ := bits.Mul64(mix(fp), t.n)
	return hi
}

// mix is the MurmurHash3 64-bit finalizer, a bijection with full avalanche.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (t *table) next(i uint64) uint64    { return ringNext(i, t.n) }
func (t *table) dist(a, b uint64) uint64 { return ringDist(a, b, t.n) }

// ringNext is the slot after i in a circular array of n slots.
func ringNext(i, n uint64) uint64 {
	if i++; i == n {
		return 0
	}
	return i
}

// ringDist is how far forward slot b is from slot a, wrapping around n.
func ringDist(a, b, n uint64) uint64 {
	if b >= a {
		return b - a
	}
	return b + n - a
}

// find returns fp's slot and true, or the free slot where it would go and
// false.
func (t *table) find(fp uint64) (uint64, bool) {
	i := t.home(fp)
	for t.used.get(i) {
		if t.keys[i] == fp {
			return i, true
		}
		i = t.next(i)
	}
	return i, false
}

// put stores fp in the free slot i returned by find.
func (t *table) put(i, fp uint64) {
	t.keys[i] = fp
	t.used.set(i)
	t.len++
}

// remove empties slot i, then shifts later entries of its cluster back into
// the hole where their probe path allows, so lookups never see a gap between
// an entry and its home.
func (t *table) remove(i uint64) {
	for j := t.next(i); t.used.get(j); j = t.next(j) {
		// The entry at j may fill hole i only if i lies on its probe path,
		// from its home up to j.
		if t.dist(i, j) <= t.dist(t.home(t.keys[j]), j) {
			t.keys[i] = t.keys[j]
			i = j
		}
	}
	t.used.clear(i)
	t.len--
}

// bitset is one bit per slot, 1/8 byte per slot.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) get(i uint64) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i uint64)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) clear(i uint64)    { b[i>>6] &^= 1 << (i & 63) }
