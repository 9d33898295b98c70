package revisit

import "math"

// Freshness is Cho and Garcia-Molina's expected freshness of a page that
// changes as a Poisson process at rate lambda and is visited f times per
// unit of time, evenly: (f/λ)(1 − e^(−λ/f)). 0 when f is not positive.
func Freshness(lambda, f float64) float64 {
	if f <= 0 {
		return 0
	}
	if lambda <= 0 {
		return 1
	}
	return f / lambda * (1 - math.Exp(-lambda/f))
}

// optimalRate is the visit rate that maximizes a page's freshness minus
// mu times its visits: ∂F/∂f = μ, that is 1 − e^(−x)(1 + x) = λμ with
// x = λ/f; a page with λμ ≥ 1 changes too fast to be worth a visit (0).
func optimalRate(lambda, mu float64) float64 {
	t := lambda * mu
	if t >= 1 {
		return 0
	}
	lo, hi := 1e-12, 80.0
	for range 80 {
		x := (lo + hi) / 2
		if 1-math.Exp(-x)*(1+x) < t {
			lo = x
		} else {
			hi = x
		}
	}
	return lambda / lo
}

// OptimalFreshness is the best mean freshness of pages changing at rates
// (all > 0) for a mean budget of visits per page per unit of time, with
// every rate known exactly (Cho and Garcia-Molina's optimal allocation):
// the bound no revisit policy can pass. The benchmarks print it beside
// what they measure.
func OptimalFreshness(rates []float64, budget float64) float64 {
	if len(rates) == 0 || budget <= 0 {
		return 0
	}
	// Visits fall as μ grows: bisect μ on a log scale for the budget.
	lo, hi := 1e-12, 1e12
	for range 200 {
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
		if hi/lo < 1+1e-12 {
			break
		}
	}
	var sum float64
	for _, l := range rates {
		sum += Freshness(l, optimalRate(l, hi))
	}
	return sum / float64(len(rates))
}
