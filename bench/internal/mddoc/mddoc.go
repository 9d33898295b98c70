// Package mddoc writes the generated parts of docs/benchmarks.md: each
// benchmark command owns the text between its pair of HTML-comment markers
// and leaves the hand-written analysis around them alone.
package mddoc

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
)

// Markers returns the begin and end markers of the named section, e.g.
// "<!-- e2e:begin -->" and "<!-- e2e:end -->".
func Markers(name string) (begin, end string) {
	return "<!-- " + name + ":begin -->", "<!-- " + name + ":end -->"
}

// Replace puts body between the markers of the named section of the file.
func Replace(file, name, body string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	begin, end := Markers(name)
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", file, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + body + s[j:]
	return os.WriteFile(file, []byte(s), 0o644)
}

// Machine describes the machine for a report's header: CPUs, model, OS and
// the Go version that built the measuring command.
func Machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s/%s, %s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// Median is how every figure of the generated sections sums up its runs:
// the middle value, or the mean of the two middle ones; 0 for no values.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	v := slices.Clone(xs)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
