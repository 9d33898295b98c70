package cache

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// static is STATIC: a fixed set, typically the most frequent fingerprints of
// an earlier crawl, in a scatter table sized for it. Insert never changes it.
type static struct {
	t     table
	stats Stats
}

// NewStatic returns a cache holding exactly the distinct fingerprints of fps;
// its Cap is their number and Insert leaves it unchanged.
//
// A STATIC hit means "in the set", which for a set taken from an earlier
// crawl is not "seen in this crawl": a dedup layer must not drop a member on
// its first sighting (services/dedup confirms members before they hit).
func NewStatic(fps []uint64) Cache {
	c := &static{t: newTable(len(fps))}
	for _, fp := range fps {
		if i, ok := c.t.find(fp); !ok {
			c.t.put(i, fp)
		}
	}
	return c
}

func (c *static) Lookup(fp uint64) bool {
	c.stats.Lookups++
	_, ok := c.t.find(fp)
	if ok {
		c.stats.Hits++
	}
	return ok
}

func (c *static) Insert(uint64) {}
func (c *static) Len() int      { return c.t.len }
func (c *static) Cap() int      { return c.t.len }
func (c *static) Stats() Stats  { return c.stats }

// LoadStatic reads a static cache file and returns a STATIC cache of its
// first size distinct fingerprints (fewer if the file is shorter). It stops
// reading once it has them.
//
// The file, as WriteStatic writes it, is UTF-8 text:
//
//   - one fingerprint per line as exactly 16 hexadecimal digits (either case);
//   - '#' starts a comment that runs to the end of the line; blank lines and
//     surrounding spaces are ignored;
//   - most frequent first, so that a reader wanting fewer entries takes a
//     prefix.
//
// Example:
//
//	# trawler static URL cache: 2 fingerprints, most frequent first
//	9f86d081884c7d65 # 10342
//	0000000000000007 # 9811
func LoadStatic(r io.Reader, size int) (Cache, error) {
	if size < 1 || size > MaxSize {
		return nil, fmt.Errorf("cache: size %d out of range [1, %d]", size, MaxSize)
	}
	var fps []uint64
	seen := make(map[uint64]struct{})
	sc := bufio.NewScanner(r)
	for line := 1; len(fps) < size && sc.Scan(); line++ {
		fp, ok, err := parseStaticLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("cache: static file line %d: %w", line, err)
		}
		if _, dup := seen[fp]; !ok || dup {
			continue
		}
		seen[fp] = struct{}{}
		fps = append(fps, fp)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cache: reading static file: %w", err)
	}
	return NewStatic(fps), nil
}

// parseStaticLine returns the line's fingerprint, or ok=false for a blank or
// comment line.
func parseStaticLine(s string) (fp uint64, ok bool, err error) {
	s, _, _ = strings.Cut(s, "#")
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	if len(s) != 16 {
		return 0, false, fmt.Errorf("want 16 hex digits, got %q", s)
	}
	fp, err = strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, false, fmt.Errorf("want 16 hex digits, got %q", s)
	}
	return fp, true, nil
}

// WriteStatic writes the size most frequent fingerprints of counts (all of
// them when size <= 0) in the static cache file format, with each count as a
// comment. Ties are broken by fingerprint so that the output is reproducible.
func WriteStatic(w io.Writer, counts map[uint64]int, size int) error {
	top := topK(counts, size)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# trawler static URL cache: %d fingerprints, most frequent first\n", len(top))
	for _, fp := range top {
		fmt.Fprintf(bw, "%016x # %d\n", fp, counts[fp])
	}
	return bw.Flush()
}

// topK returns the k most frequent fingerprints of counts (all when k <= 0),
// most frequent first, ties by ascending fingerprint.
func topK(counts map[uint64]int, k int) []uint64 {
	type fpCount struct {
		fp uint64
		n  int
	}
	all := make([]fpCount, 0, len(counts))
	for fp, n := range counts {
		all = append(all, fpCount{fp, n})
	}
	slices.SortFunc(all, func(a, b fpCount) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return cmp.Compare(a.fp, b.fp)
	})
	if k > 0 && k < len(all) {
		all = all[:k]
	}
	fps := make([]uint64, len(all))
	for i, e := range all {
		fps[i] = e.fp
	}
	return fps
}
