package main

import (
	"io"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/trawlerhq/trawler/bench/internal/mddoc"
)

// A series is every value one benchmark reported in one unit, one per run
// (-count).
type series struct {
	Pkg, Name, Unit string // Name without "Benchmark" and the -GOMAXPROCS suffix
	Values          []float64
}

func (s series) median() float64 { return mddoc.Median(s.Values) }
func (s series) min() float64    { return slices.Min(s.Values) }
func (s series) max() float64    { return slices.Max(s.Values) }

// results holds the series of one `go test -bench` output, in the order the
// benchmarks first appeared.
type results struct {
	order  []string
	series map[string]*series
	// Broken counts the lines that began like a result but did not parse
	// (a log line written into a result, say): those results are lost, and
	// the report says so.
	Broken []string
}

func key(name, unit string) string { return name + "\x00" + unit }

// parse reads `go test -bench` output. Values keep the units the benchmarks
// reported (MB/s stays MB/s: benchfmt would tidy it to B/s).
func parse(r io.Reader) *results {
	res := &results{series: map[string]*series{}}
	br := benchfmt.NewReader(r, "go test")
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.SyntaxError:
			res.Broken = append(res.Broken, rec.Error())
		case *benchfmt.Result:
			name := benchName(rec.Name)
			pkg := strings.TrimPrefix(rec.GetConfig("pkg"), modulePath+"/")
			for _, v := range rec.Values {
				unit, val := v.Unit, v.Value
				if v.OrigUnit != "" {
					unit, val = v.OrigUnit, v.OrigValue
				}
				k := key(name, unit)
				s, ok := res.series[k]
				if !ok {
					s = &series{Pkg: pkg, Name: name, Unit: unit}
					res.series[k] = s
					res.order = append(res.order, k)
				}
				s.Values = append(s.Values, val)
			}
		}
	}
	return res
}

// benchName drops the "Benchmark" prefix and the -GOMAXPROCS suffix:
// "BenchmarkDispatch/redis/hosts=2000-2" is "Dispatch/redis/hosts=2000".
func benchName(n benchfmt.Name) string {
	base, parts := n.Parts()
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(string(base), "Benchmark"))
	for _, p := range parts {
		if len(p) > 0 && p[0] == '-' {
			continue // GOMAXPROCS
		}
		b.Write(p)
	}
	return b.String()
}

// get returns the series of a benchmark and unit, if it ran.
func (r *results) get(name, unit string) (*series, bool) {
	s, ok := r.series[key(name, unit)]
	return s, ok
}

// all returns every series in the order the benchmarks ran, leaving out the
// ns/op a benchmark zeroes because its own metrics are the measurement.
func (r *results) all() []*series {
	var out []*series
	for _, k := range r.order {
		s := r.series[k]
		if s.Unit == "ns/op" && s.max() == 0 {
			continue
		}
		out = append(out, s)
	}
	return out
}
