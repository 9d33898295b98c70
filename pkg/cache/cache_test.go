package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// dynamic are the policies New makes.
var dynamic = []string{Clock, LRU, Random}

func mustNew(t testing.TB, policy string, size int) Cache {
	t.Helper()
	c, err := New(policy, size)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// contains reports whether fp is in c without recording a use.
func contains(c Cache, fp uint64) bool {
	switch c := c.(type) {
	case *clock:
		_, _, ok := c.idx.find(fp, c.keys)
		return ok
	case *lru:
		_, _, ok := c.idx.find(fp, c.keys)
		return ok
	case *random:
		_, ok := c.t.find(fp)
		return ok
	case *static:
		_, ok := c.t.find(fp)
		return ok
	}
	panic(fmt.Sprintf("contains: %T", c))
}

func TestNew(t *testing.T) {
	for policy, want := range map[string]string{"": "*cache.clock", "clock": "*cache.clock", "CLOCK": "*cache.clock", "lru": "*cache.lru", "Random": "*cache.random"} {
		c := mustNew(t, policy, 10)
		if got := fmt.Sprintf("%T", c); got != want || c.Cap() != 10 || c.Len() != 0 {
			t.Errorf("New(%q, 10) = %s cap %d len %d, want %s cap 10 len 0", policy, got, c.Cap(), c.Len(), want)
		}
	}
	if _, err := New("static", 10); !errors.Is(err, ErrStaticNeedsSet) {
		t.Errorf("New(static) err = %v, want ErrStaticNeedsSet", err)
	}
	for _, bad := range []struct {
		policy string
		size   int
	}{{"fifo", 10}, {"clock", 0}, {"lru", -1}, {"random", MaxSize + 1}} {
		if _, err := New(bad.policy, bad.size); err == nil {
			t.Errorf("New(%q, %d) succeeded", bad.policy, bad.size)
		}
	}
}

// replay feeds trace to c as the dedup service does (Lookup, and Insert on
// a miss) and returns the hits. (The cache study's simulator,
// internal/cachestudy/sim, has the same as Replay.)
func replay(c Cache, trace []uint64) (hits int) {
	for _, fp := range trace {
		if c.Lookup(fp) {
			hits++
		} else {
			c.Insert(fp)
		}
	}
	return hits
}

// stream returns n fingerprints over a universe of u values with repeats
// at all distances: often the last few values, else a skewed pick. Values
// are spread over 64 bits, with 0 and ^0 among them.
func stream(seed uint64, n, u int) []uint64 {
	r := rand.New(rand.NewPCG(seed, 7))
	vals := make([]uint64, u)
	for i := range vals {
		vals[i] = r.Uint64()
	}
	vals[0], vals[len(vals)-1] = 0, ^uint64(0)
	out := make([]uint64, n)
	for i := range out {
		switch {
		case i > 0 && r.IntN(4) == 0:
			out[i] = out[i-1-r.IntN(min(i, 8))]
		case r.IntN(2) == 0:
			out[i] = vals[r.IntN(max(1, u/10))] // a popular tenth
		default:
			out[i] = vals[r.IntN(u)]
		}
	}
	return out
}

// TestNoFalseHits replays random streams through every dynamic policy and
// checks it against an exact model: a hit only for a fingerprint inserted
// before, Len within Cap, the counters consistent, a fingerprint present
// right after its insert, and exact set behaviour when nothing must be
// evicted.
func TestNoFalseHits(t *testing.T) {
	for _, policy := range dynamic {
		for _, size := range []int{1, 2, 3, 7, 64, 1000, 50_000} {
			for seed := range uint64(3) {
				t.Run(fmt.Sprintf("%s/%d/%d", policy, size, seed), func(t *testing.T) {
					checkAgainstModel(t, mustNew(t, policy, size), stream(seed, 20_000, 3*size+20))
				})
			}
		}
	}
}

func checkAgainstModel(t *testing.T, c Cache, trace []uint64) {
	inserted := map[uint64]bool{}
	var hits uint64
	for i, fp := range trace {
		hit := c.Lookup(fp)
		switch {
		case hit && !inserted[fp]:
			t.Fatalf("op %d: hit on %#x, never inserted", i, fp)
		case !hit && i > 0 && trace[i-1] == fp:
			t.Fatalf("op %d: miss on %#x, inserted by the previous op", i, fp)
		case !hit && c.Cap() >= len(inserted) && inserted[fp]:
			t.Fatalf("op %d: miss on %#x with room for everything", i, fp)
		}
		if hit {
			hits++
			before := c.Stats()
			c.Insert(fp) // already present: only a use
			if c.Stats() != before {
				t.Fatalf("op %d: inserting a present fingerprint changed stats", i)
			}
		} else {
			c.Insert(fp)
			inserted[fp] = true
		}
		s := c.Stats()
		if c.Len() > c.Cap() || c.Len() != int(s.Inserts-s.Evictions) {
			t.Fatalf("op %d: len %d cap %d stats %+v", i, c.Len(), c.Cap(), s)
		}
	}
	s := c.Stats()
	if s.Lookups != uint64(len(trace)) || s.Hits != hits || s.Inserts != uint64(len(trace))-hits {
		t.Fatalf("stats %+v, want %d lookups %d hits", s, len(trace), hits)
	}
	if c.Cap() >= len(inserted) && s.Evictions != 0 {
		t.Fatalf("%d evictions with room for all %d fingerprints", s.Evictions, len(inserted))
	}
}

func TestStaticHitsExactlyItsSet(t *testing.T) {
	set := stream(1, 500, 300) // with duplicates
	member := map[uint64]bool{}
	for _, fp := range set {
		member[fp] = true
	}
	c := NewStatic(set)
	if c.Len() != len(member) || c.Cap() != len(member) {
		t.Fatalf("len %d cap %d, want %d", c.Len(), c.Cap(), len(member))
	}
	for i, fp := range stream(2, 10_000, 600) {
		if got := c.Lookup(fp); got != member[fp] {
			t.Fatalf("op %d: Lookup(%#x) = %v, member %v", i, fp, got, member[fp])
		}
		c.Insert(fp)
	}
	if c.Len() != len(member) || c.Stats().Inserts != 0 || c.Stats().Evictions != 0 {
		t.Fatalf("Insert changed STATIC: len %d stats %+v", c.Len(), c.Stats())
	}
	empty := NewStatic(nil)
	if empty.Lookup(0) || empty.Len() != 0 {
		t.Fatal("empty STATIC hit")
	}
}

// refLRU is the obvious LRU: a slice, most recent first.
type refLRU struct {
	size int
	keys []uint64
}

func (r *refLRU) access(fp uint64) (hit bool) {
	if i := slices.Index(r.keys, fp); i >= 0 {
		r.keys = slices.Delete(r.keys, i, i+1)
		hit = true
	} else if len(r.keys) == r.size {
		r.keys = r.keys[:len(r.keys)-1]
	}
	r.keys = slices.Insert(r.keys, 0, fp)
	return hit
}

// order lists the lru's keys from most to least recent.
func (c *lru) order() []uint64 {
	var out []uint64
	for i := c.head; i != nilRef; i = c.next[i] {
		out = append(out, c.keys[i])
	}
	return out
}

func TestLRUMatchesReference(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5, 8, 16, 100} {
		for seed := range uint64(5) {
			c := newLRU(size)
			ref := &refLRU{size: size}
			for i, fp := range stream(seed, 5000, 2*size+3) {
				hit := c.Lookup(fp)
				if !hit {
					c.Insert(fp)
				}
				if want := ref.access(fp); hit != want {
					t.Fatalf("size %d seed %d op %d: hit %v, reference %v", size, seed, i, hit, want)
				}
				if got := c.order(); !slices.Equal(got, ref.keys) {
					t.Fatalf("size %d seed %d op %d: order %x, reference %x", size, seed, i, got, ref.keys)
				}
			}
		}
	}
}

// TestClockSecondChance walks CLOCK through a hand-built sequence.
func TestClockSecondChance(t *testing.T) {
	const a, b, c, d, e, f = 0xa, 0xb, 0xc, 0xd, 0xe, 0xf
	k := newClock(3)
	for _, fp := range []uint64{a, b, c} { // face: a b c, hand on a
		k.Insert(fp)
	}
	k.Lookup(a) // marks a
	want := func(step string, in ...uint64) {
		t.Helper()
		var got []uint64
		for _, fp := range []uint64{a, b, c, d, e, f} {
			if contains(k, fp) {
				got = append(got, fp)
			}
		}
		if !slices.Equal(got, in) {
			t.Fatalf("%s: cache holds %x, want %x", step, got, in)
		}
	}
	k.Insert(d) // a is marked: cleared, spared; b is evicted
	want("insert d", a, c, d)
	k.Insert(e) // hand on c, unmarked: evicted
	want("insert e", a, d, e)
	k.Insert(f) // hand back on a, mark cleared on the last pass: evicted
	want("insert f", d, e, f)

	// With every entry marked the hand goes all the way round, clearing,
	// and evicts the entry it started on.
	k = newClock(3)
	for _, fp := range []uint64{a, b, c} {
		k.Insert(fp)
		k.Lookup(fp)
	}
	k.Insert(d)
	want("all marked", b, c, d)
	if k.Stats().Evictions != 1 {
		t.Fatalf("evictions %d, want 1", k.Stats().Evictions)
	}
}

func TestRandomIsDeterministicAndSpreads(t *testing.T) {
	trace := stream(9, 20_000, 500)
	c1, c2 := mustNew(t, Random, 50), mustNew(t, Random, 50)
	if h1, h2 := replay(c1, trace), replay(c2, trace); h1 != h2 || c1.Stats() != c2.Stats() {
		t.Fatalf("same seed, different runs: %d/%+v vs %d/%+v", h1, c1.Stats(), h2, c2.Stats())
	}
	// Each eviction picks uniformly among the 100 entries, new ones
	// included: after 50 more inserts about 100*0.99^50 = 60.5 of the first
	// 100 remain.
	c := newRandom(100, 1)
	for i := range uint64(150) {
		c.Insert(i)
	}
	kept := 0
	for i := range uint64(100) {
		if contains(c, i) {
			kept++
		}
	}
	if kept < 45 || kept > 75 || c.Len() != 100 {
		t.Fatalf("%d of the first 100 kept after 50 evictions (len %d), want about 60", kept, c.Len())
	}
}

func TestSynchronized(t *testing.T) {
	c := NewSynchronized(mustNew(t, Clock, 100))
	if NewSynchronized(c) != c {
		t.Fatal("wrapping twice made a second wrapper")
	}
	var wg sync.WaitGroup
	for g := range uint64(4) {
		wg.Go(func() {
			for _, fp := range stream(g, 2000, 300) {
				if !c.Lookup(fp) {
					c.Insert(fp)
				}
				_, _ = c.Len(), c.Cap()
			}
		})
	}
	wg.Wait()
	if s := c.Stats(); s.Lookups != 8000 || c.Len() > 100 {
		t.Fatalf("stats %+v len %d", s, c.Len())
	}
}

// TestTableMatchesMap drives the scatter table and the index directly with
// small sizes, so probe sequences wrap around and clusters merge.
func TestTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, size := range []int{1, 2, 5, 40} {
		tb := newTable(size)
		model := map[uint64]bool{}
		for range 20_000 {
			fp := uint64(r.IntN(3 * size))
			i, ok := tb.find(fp)
			if ok != model[fp] {
				t.Fatalf("size %d: find(%d) = %v, model %v", size, fp, ok, model[fp])
			}
			switch {
			case ok:
				tb.remove(i)
				delete(model, fp)
			case tb.len < size:
				tb.put(i, fp)
				model[fp] = true
			}
		}
	}
}

func TestIndexMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, size := range []int{1, 2, 5, 40, 1 << 20} {
		x := newIndex(size)
		keys := make([]uint64, size) // keys[ref]; free refs hold a stale key
		free := make([]int32, size)
		for i := range free {
			free[i] = int32(i)
		}
		model := map[uint64]int32{}
		for range 20_000 {
			fp := uint64(r.IntN(3*min(size, 100))) << 40 // only high bits differ
			slot, ref, ok := x.find(fp, keys)
			want, inModel := model[fp]
			if ok != inModel || ok && ref != want {
				t.Fatalf("size %d: find(%#x) = %d %v, model %d %v", size, fp, ref, ok, want, inModel)
			}
			switch {
			case ok:
				x.remove(slot, keys)
				delete(model, fp)
				free = append(free, ref)
			case len(free) > 0:
				ref, free = free[len(free)-1], free[:len(free)-1]
				keys[ref] = fp
				x.put(slot, fp, ref)
				model[fp] = ref
			}
		}
	}
}
