package simhash

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The index must answer what a scan of every entry answers: the blocks only
// skip entries that cannot be within the distance.
func TestIndexAgreesWithScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, distance := range []int{0, 3, DefaultDistance, MaxDistance} {
		x, err := NewIndex(distance, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var all []uint64
		// Clusters of near fingerprints (a random centre, a few bits
		// flipped) among random ones.
		for i := range 3000 {
			fp := r.Uint64()
			if i%3 != 0 && len(all) > 0 {
				fp = flip(r, all[r.IntN(len(all))], r.IntN(distance+3))
			}
			id, d, ok := x.Nearest(fp)
			wantID, wantD, wantOK := scan(all, fp, distance)
			if ok != wantOK || ok && (d != wantD || id != wantID) {
				t.Fatalf("distance %d, query %d: index (%q, %d, %v), scan (%q, %d, %v)", distance, i, id, d, ok, wantID, wantD, wantOK)
			}
			x.Add(fp, fmt.Sprint(len(all)))
			all = append(all, fp)
		}
	}
}

// scan is the reference: the closest, earliest entry within distance.
func scan(all []uint64, fp uint64, distance int) (string, int, bool) {
	best, at := distance+1, -1
	for i, e := range all {
		if d := Distance(fp, e); d < best {
			best, at = d, i
		}
	}
	if at < 0 {
		return "", 0, false
	}
	return fmt.Sprint(at), best, true
}

func flip(r *rand.Rand, fp uint64, n int) uint64 {
	for _, b := range r.Perm(64)[:n] {
		fp ^= 1 << uint(b)
	}
	return fp
}

func TestIndexForgetsTheOldestWhenFull(t *testing.T) {
	x, err := NewIndex(3, 3)
	if err != nil {
		t.Fatal(err)
	}
	x.Add(0b0001, "a")
	x.Add(0xf0f0_0000_0000_0000, "b")
	x.Add(0x0f0f_0000_0000_0000, "c")
	if id, d, ok := x.Nearest(0b0011); !ok || id != "a" || d != 1 {
		t.Fatalf("Nearest = %q, %d, %v; want a, 1", id, d, ok)
	}
	x.Add(0b0111, "d") // evicts a
	if x.Len() != 3 {
		t.Errorf("Len = %d, want 3", x.Len())
	}
	if id, d, ok := x.Nearest(0b0001); !ok || id != "d" || d != 2 {
		t.Errorf("after eviction Nearest = %q, %d, %v; want d, 2", id, d, ok)
	}
	// Equally close entries: the earliest still held wins, across the
	// ring's wrap (d sits in slot 0, b and c after it but added before).
	x.Add(0xf0f0_0000_0000_0001, "e") // evicts b
	if id, _, _ := x.Nearest(0xf0f0_0000_0000_0000); id != "e" {
		t.Errorf("Nearest after wrap = %q, want e", id)
	}
	x.Add(0x0f0f_0000_0000_0001, "f") // evicts c
	if id, d, _ := x.Nearest(0x0f0f_0000_0000_0000); id != "f" || d != 1 {
		t.Errorf("Nearest = %q, %d; want f, 1", id, d)
	}
}

func TestIndexEqualDistanceEarliestWins(t *testing.T) {
	x, _ := NewIndex(3, 10)
	x.Add(0b01, "first")
	x.Add(0b10, "second")
	if id, d, _ := x.Nearest(0); id != "first" || d != 1 {
		t.Errorf("Nearest = %q, %d; want first, 1", id, d)
	}
}

func TestNewIndexRejectsBadArguments(t *testing.T) {
	for _, c := range []struct{ distance, capacity int }{{-1, 10}, {MaxDistance + 1, 10}, {3, 0}} {
		if _, err := NewIndex(c.distance, c.capacity); err == nil {
			t.Errorf("NewIndex(%d, %d) accepted", c.distance, c.capacity)
		}
	}
}

func BenchmarkIndexNearest(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	x, _ := NewIndex(DefaultDistance, 10000)
	for i := range 10000 {
		x.Add(r.Uint64(), fmt.Sprint(i))
	}
	b.ResetTimer()
	for b.Loop() {
		x.Nearest(r.Uint64())
	}
}
