package freshweb

import (
	"math"
	"time"

	"github.com/trawlerhq/trawler/pkg/revisit"
)

// What the measures should be, from Cho and Garcia-Molina ("Synchronizing
// a database to improve freshness", SIGMOD 2000; "Effective page refresh
// policies for Web crawlers", TODS 2003): a page changing as a Poisson
// process at rate λ and visited every I keeps a fresh copy
// (1 - e^(-λI)) / (λI) of the time, with a mean age of
// I/2 - 1/λ + (1 - e^(-λI)) / (λ²I). A measured uniform run should come
// close to them; the optimal allocation bounds every policy.

// Freshness is the expected freshness of a page changing at rate (per
// second; 0: never) visited every interval.
func Freshness(rate float64, interval time.Duration) float64 {
	x := rate * interval.Seconds()
	if rate == 0 || x < 1e-9 { // a page that never changes, or a copy always renewed
		return 1 - max(x, 0)/2
	}
	return -math.Expm1(-x) / x
}

// Age is the expected age of such a page.
func Age(rate float64, interval time.Duration) time.Duration {
	i := interval.Seconds()
	x := rate * i
	if rate == 0 || i <= 0 {
		return 0
	}
	if x < 1e-4 { // the series: I (x/6 - x²/24)
		return seconds(i * (x/6 - x*x/24))
	}
	return seconds(i/2 - 1/rate + -math.Expm1(-x)/(rate*x))
}

// Theory is what a web's pages, with the given rates, should score at a
// bandwidth (page fetches per second over the whole web).
type Theory struct {
	Bandwidth float64
	// Interval is the uniform policy's: every page once per pages /
	// bandwidth.
	Interval time.Duration
	// UniformFreshness and UniformAge are the uniform policy's expected
	// measures.
	UniformFreshness float64
	UniformAge       time.Duration
	// OptimalFreshness is the best any policy can do knowing every rate
	// (Cho and Garcia-Molina's optimal allocation: each changing page
	// visited at the rate where ∂F/∂f is the same for all, pages changing
	// too fast for the budget not at all, pages that never change once).
	OptimalFreshness float64
}

// Predict is the theory of rates at bandwidth.
func Predict(rates []float64, bandwidth float64) Theory {
	t := Theory{Bandwidth: bandwidth}
	if len(rates) == 0 || bandwidth <= 0 {
		return t
	}
	n := float64(len(rates))
	t.Interval = seconds(n / bandwidth)
	var f, a float64
	var changing []float64
	for _, l := range rates {
		f += Freshness(l, t.Interval)
		a += Age(l, t.Interval).Seconds()
		if l > 0 {
			changing = append(changing, l)
		}
	}
	t.UniformFreshness = f / n
	t.UniformAge = seconds(a / n)
	static := n - float64(len(changing))
	t.OptimalFreshness = (static + float64(len(changing))*revisit.OptimalFreshness(changing, bandwidth/float64(max(len(changing), 1)))) / n
	return t
}
