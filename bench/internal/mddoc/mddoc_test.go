package mddoc

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestReplaceKeepsTheRest(t *testing.T) {
	begin, end := Markers("e2e")
	file := t.TempDir() + "/b.md"
	in := "# Benchmarks\n\ncomponent\n\n" + begin + "\nold\n" + end + "\n\nanalysis\n"
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(file, "e2e", "new report\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	want := "# Benchmarks\n\ncomponent\n\n" + begin + "\nnew report\n" + end + "\n\nanalysis\n"
	if string(b) != want {
		t.Fatalf("got %q", b)
	}
	if err := Replace(file, "components", "x"); err == nil || !strings.Contains(err.Error(), "components:begin") {
		t.Fatalf("a file without the section's markers: err = %v", err)
	}
	if err := os.WriteFile(file, []byte(end+"\n"+begin), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(file, "e2e", "x"); err == nil {
		t.Fatal("markers in the wrong order were accepted")
	}
}

func TestMachineNamesCPUsAndGo(t *testing.T) {
	m := Machine()
	if !strings.Contains(m, "CPUs") || !strings.Contains(m, "go1.") {
		t.Fatalf("Machine() = %q", m)
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := slices.Clone(tt.in)
		if got := Median(in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("Median reordered its input: %v", in)
		}
	}
}
