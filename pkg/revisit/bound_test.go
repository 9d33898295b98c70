package revisit

import (
	"math"
	"testing"
)

// TestFreshnessBound computes how much better than uniform revisiting any
// policy can be, with rates spread log-uniformly from once an hour to once
// a week (per day: 24 to 1/7), a share of pages that never change, and a
// bandwidth of visits per page per day. It is the table in docs/frontier.md:
// issue 21's 1.3x is out of reach but for scarce bandwidth and no static
// pages. It checks the bound is one (optimal >= uniform, both in [0, 1]).
func TestFreshnessBound(t *testing.T) {
	const n = 1000
	rates := make([]float64, n)
	lo, hi := math.Log(1.0/7), math.Log(24)
	for i := range rates {
		rates[i] = math.Exp(lo + (float64(i)+0.5)/n*(hi-lo))
	}
	for _, static := range []float64{0, 0.5, 0.8} {
		for _, bw := range []float64{1.0 / 7, 0.5, 1, 4} {
			var u float64
			for _, l := range rates {
				u += Freshness(l, bw)
			}
			uniform := static + (1-static)*u/n
			optimal := static + (1-static)*OptimalFreshness(rates, bw/(1-static))
			t.Logf("static %.0f%%, %.2f visits/page/day: uniform %.3f, optimal %.3f (%.2fx)", 100*static, bw, uniform, optimal, optimal/uniform)
			if optimal < uniform-1e-3 || optimal > 1 || uniform < 0 {
				t.Errorf("static %.1f, bandwidth %.2f: uniform %.3f, optimal %.3f: not a bound", static, bw, uniform, optimal)
			}
		}
	}
}
