package config

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{
		"0": 0, "4096": 4096, "300MiB": 300 << 20, "300mib": 300 << 20, "1.5GiB": 3 << 29,
		"500MB": 500e6, "2 KiB": 2048, "7b": 7,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "300MiBs", "lots", "1e30GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
	for _, z := range []Size{0, 300 << 20, 2 << 30, 3 << 10, 1000} {
		if back, err := ParseSize(z.String()); err != nil || back != z {
			t.Errorf("%d printed as %q reads back as %d, %v", z, z.String(), back, err)
		}
	}
}
