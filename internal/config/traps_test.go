package config

import (
	"strings"
	"testing"
)

// The link limits against crawler traps (issue 18): their documented
// defaults, 0 turning each off, negative values refused.
func TestTrapLimits(t *testing.T) {
	c, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxURLLength != 256 || c.MaxPathDepth != 20 || c.MaxRepeatedSegments != 2 || c.MaxQueryParams != 20 || c.MaxPagesPerHost != 100000 {
		t.Errorf("defaults: url length %d, path depth %d, repeated segments %d, query params %d, pages per host %d",
			c.MaxURLLength, c.MaxPathDepth, c.MaxRepeatedSegments, c.MaxQueryParams, c.MaxPagesPerHost)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	t.Setenv("TRAWLER_MAX_QUERY_PARAMS", "0")
	c, err = parse(t, []string{"--max-path-depth", "0", "--max-repeated-segments", "0", "--max-pages-per-host", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxPathDepth != 0 || c.MaxRepeatedSegments != 0 || c.MaxQueryParams != 0 || c.MaxPagesPerHost != 0 {
		t.Errorf("0 not taken: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("0 (off) refused: %v", err)
	}
	for _, flag := range []string{"--max-path-depth", "--max-repeated-segments", "--max-query-params"} {
		c, err := parse(t, []string{flag, "-1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s -1: %v", flag, err)
		}
	}
}
