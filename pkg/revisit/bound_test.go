package revisit

import (
	"math"
	"testing"
)

// freshness is Cho and Garcia-Molina's expected freshness of a page that
// changes as a Poisson process at rate lambda and is visited f times per
// unit of time, evenly: (f/λ)(1 − e^(−λ/f)).
func freshness(lambda, f float64) float64 {
	if f <= 0 {
		return 0
	}
	return f / lambda * (1 - math.Exp(-lambda/f))
}

// optimalRate is the visit rate that maximizes total freshness under a
// bandwidth constraint with Lagrange multiplier mu: ∂F/∂f = μ, that is
// 1 − e^(−x)(1 + x) = λμ with x = λ/f; pages with λμ ≥ 1 change too fast
// to be worth a visit (f = 0).
func optimalRate(lambda, mu float64) float64 {
	t := lambda * mu
	if t >= 1 {
		return 0
	}
	lo, hi := 1e-12, 80.0
	for range 70 {
		x := (lo + hi) / 2
		if 1-math.Exp(-x)*(1+x) < t {
			lo = x
		} else {
			hi = x
		}
	}
	return lambda / lo
}

// optimalFreshness is the best average freshness of pages with the given
// change rates for an average budget of visits per page, with perfect
// knowledge of every rate: the bound no revisit policy can pass.
func optimalFreshness(rates []float64, budget float64) float64 {
	lo, hi := 1e-6, 1e3
	for range 60 {
		mu := math.Sqrt(lo * hi)
		var total float64
		for _, l := range rates {
			total += optimalRate(l, mu)
		}
		if total/float64(len(rates)) > budget {
			lo = mu
		} else {
			hi = mu
		}
	}
	var sum float64
	for _, l := range rates {
		sum += freshness(l, optimalRate(l, hi))
	}
	return sum / float64(len(rates))
}

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
				u += freshness(l, bw)
			}
			uniform := static + (1-static)*u/n
			optimal := static + (1-static)*optimalFreshness(rates, bw/(1-static))
			t.Logf("static %.0f%%, %.2f visits/page/day: uniform %.3f, optimal %.3f (%.2fx)", 100*static, bw, uniform, optimal, optimal/uniform)
			if optimal < uniform-1e-3 || optimal > 1 || uniform < 0 {
				t.Errorf("static %.1f, bandwidth %.2f: uniform %.3f, optimal %.3f: not a bound", static, bw, uniform, optimal)
			}
		}
	}
}
