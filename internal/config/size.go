package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is a flag value of bytes written with an optional unit: 300MiB,
// 1.5GiB, 500MB, 4096. Units are case-insensitive; KiB, MiB and GiB are
// powers of 1024, KB, MB and GB of 1000.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"b", 1},
}

// ParseSize reads a Size.
func ParseSize(s string) (Size, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 || n*mult > 1<<62 {
		return 0, fmt.Errorf("%q is not a size: want bytes, or a number with KiB, MiB, GiB, KB, MB or GB", s)
	}
	return Size(n * mult), nil
}

func (z *Size) Set(s string) error {
	v, err := ParseSize(s)
	if err == nil {
		*z = v
	}
	return err
}

func (z Size) String() string {
	switch {
	case z == 0:
		return "0"
	case z%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", z>>30)
	case z%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", z>>20)
	case z%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", z>>10)
	}
	return strconv.FormatInt(int64(z), 10)
}
