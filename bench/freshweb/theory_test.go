package freshweb

import (
	"math"
	"testing"
	"time"
)

// TestPredictMatchesTheBound holds Predict to the table of docs/frontier.md
// (pkg/revisit's TestFreshnessBound): rates log-uniform from once an hour
// to once a week, no page static.
func TestPredictMatchesTheBound(t *testing.T) {
	const n = 1000
	rates := make([]float64, n)
	lo, hi := math.Log(1.0/(7*24*3600)), math.Log(1.0/3600)
	for i := range rates {
		rates[i] = math.Exp(lo + (float64(i)+0.5)/n*(hi-lo))
	}
	day := 24 * 3600.0
	for _, c := range []struct{ perDay, uniform, optimal float64 }{
		{1.0 / 7, 0.165, 0.238},
		{0.5, 0.350, 0.397},
		{1, 0.468, 0.500},
		{4, 0.704, 0.730},
	} {
		th := Predict(rates, c.perDay*n/day)
		if !near(th.UniformFreshness, c.uniform, 0.0015) || !near(th.OptimalFreshness, c.optimal, 0.0015) {
			t.Errorf("%.2f visits/page/day: uniform %.4f, optimal %.4f; want %.3f, %.3f", c.perDay, th.UniformFreshness, th.OptimalFreshness, c.uniform, c.optimal)
		}
	}
	// Half the pages static: they are fresh for one visit, and the bound
	// gives the rest their bandwidth (the table's 50 %, 1/day row).
	mixed := append(make([]float64, n), rates...)
	th := Predict(mixed, 2*n/day)
	if !near(th.UniformFreshness, 0.734, 0.0015) || !near(th.OptimalFreshness, 0.806, 0.0015) {
		t.Errorf("half static: uniform %.4f, optimal %.4f; want 0.734, 0.806", th.UniformFreshness, th.OptimalFreshness)
	}
}

// TestAgeFormula integrates the expected age of a copy synced at 0, s -
// (1 - e^(-λs))/λ at time s, over an interval, numerically.
func TestAgeFormula(t *testing.T) {
	for _, c := range []struct{ rate, interval float64 }{{0.1, 50}, {1.0 / 600, 50}, {0.2, 5}, {1e-7, 10}, {2, 100}} {
		const steps = 200000
		var sum, fresh float64
		for k := range steps {
			s := (float64(k) + 0.5) / steps * c.interval
			sum += s - (1-math.Exp(-c.rate*s))/c.rate
			fresh += math.Exp(-c.rate * s)
		}
		age, f := sum/steps, fresh/steps
		got := Age(c.rate, sec(c.interval)).Seconds()
		if !near(got, age, 1e-6*c.interval+1e-9) || !near(Freshness(c.rate, sec(c.interval)), f, 1e-6) {
			t.Errorf("rate %g, interval %gs: age %.6g, freshness %.6f; numeric %.6g, %.6f", c.rate, c.interval, got, Freshness(c.rate, sec(c.interval)), age, f)
		}
	}
	if Freshness(0, time.Hour) != 1 || Age(0, time.Hour) != 0 {
		t.Error("a page that never changes is not always fresh")
	}
}
