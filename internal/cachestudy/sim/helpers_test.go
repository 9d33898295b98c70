package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trawlerhq/trawler/pkg/cache"
)

// dynamic are the policies cache.New makes.
var dynamic = []string{cache.Clock, cache.LRU, cache.Random}

func mustNew(t testing.TB, policy string, size int) cache.Cache {
	t.Helper()
	c, err := cache.New(policy, size)
	if err != nil {
		t.Fatal(err)
	}
	return c
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
