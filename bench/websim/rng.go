package websim

import (
	"math"
	"sort"
)

// rng is SplitMix64: tiny, fast and fully determined by its seed, so a page
// is the same whichever process generates it.
type rng struct{ s uint64 }

func newRNG(seed, a, b uint64) *rng {
	r := &rng{s: seed ^ a*0x9e3779b97f4a7c15 ^ b*0xc2b2ae3d27d4eb4f}
	r.next()
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// normal is a standard normal deviate (Box-Muller).
func (r *rng) normal() float64 {
	u := 1 - r.float()
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}

// zipf samples ranks 0..n-1 with P(k) proportional to 1/(k+1)^s.
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for k := range cdf {
		sum += 1 / math.Pow(float64(k+1), s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	return zipf{cdf}
}

func (z zipf) sample(r *rng) int {
	u := r.float()
	return min(sort.SearchFloat64s(z.cdf, u), len(z.cdf)-1)
}

// hashString is FNV-1a.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
