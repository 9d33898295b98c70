// Package traps holds the link limits against crawler traps: sites that
// generate an endless supply of URLs (calendars, paths that grow a segment
// at every hop, session IDs, query explosions). Pant, Srinivasan and Menczer
// (Crawling the Web, 2004) advise bounding the length of URLs and the pages
// taken from one site; Heritrix (TooManyPathSegmentsDecideRule,
// PathologicalPathDecideRule), Nutch (its repeating-segment regular
// expression) and StormCrawler (BasicURLFilter) bound path depth and
// repeated path segments. The checks read a canonical URL (pkg/urlx) as a
// string: no parsing, no allocation on the common path.
package traps

import (
	"hash/maphash"
	"strings"
)

// Reason says why a link was excluded.
type Reason uint8

// The reasons, in the order the checks run. Pattern is not decided here
// (the parser's --allow/--deny), but is counted alongside.
const (
	Allowed Reason = iota
	URLLength
	PathDepth
	RepeatedSegment
	QueryParams
	Pattern
	NumReasons // the number of reasons, Allowed included
)

var labels = [NumReasons]string{"", "url_length", "path_depth", "repeated_segment", "query_params", "pattern"}
var words = [NumReasons]string{"", "url length", "path depth", "repeated segment", "query params", "pattern"}

// String is the reason's metric label ("url_length").
func (r Reason) String() string {
	if r < NumReasons {
		return labels[r]
	}
	return "unknown"
}

// Words is the reason in words, for people ("url length").
func (r Reason) Words() string {
	if r < NumReasons {
		return words[r]
	}
	return "unknown"
}

// Excluded lists the reasons a link can be excluded for (all but Allowed).
func Excluded() []Reason {
	return []Reason{URLLength, PathDepth, RepeatedSegment, QueryParams, Pattern}
}

// Limits are a crawl's link limits; 0 turns a limit off.
type Limits struct {
	MaxURLLength int // bytes of the canonical URL (--max-url-length)
	MaxPathDepth int // path segments (--max-path-depth)
	// MaxRepeatedSegments is how often one path segment may occur in the
	// path, anywhere (--max-repeated-segments).
	MaxRepeatedSegments int
	MaxQueryParams      int // query parameters, repeated names included (--max-query-params)
}

// Check returns the first limit the canonical URL u breaks, in the order of
// the reasons, or Allowed.
func (l Limits) Check(u string) Reason {
	if l.MaxURLLength > 0 && len(u) > l.MaxURLLength {
		return URLLength
	}
	if l.MaxPathDepth <= 0 && l.MaxRepeatedSegments <= 0 && l.MaxQueryParams <= 0 {
		return Allowed
	}
	path, query := Split(u)
	depth := Depth(path)
	if l.MaxPathDepth > 0 && depth > l.MaxPathDepth {
		return PathDepth
	}
	// No segment can occur more often than there are segments (an inner
	// empty one aside, which Depth counts too).
	if l.MaxRepeatedSegments > 0 && depth > l.MaxRepeatedSegments && MostRepeated(path) > l.MaxRepeatedSegments {
		return RepeatedSegment
	}
	if l.MaxQueryParams > 0 && CountParams(query) > l.MaxQueryParams {
		return QueryParams
	}
	return Allowed
}

// Split returns the path and the query (without '?') of a URL: the path
// starts at the first '/' or '?' after the scheme's "//" (a canonical URL
// has one), the query after the first '?'; a fragment is left out.
func Split(u string) (path, query string) {
	rest := u
	switch {
	case strings.HasPrefix(u, "http://"):
		rest = u[len("http://"):]
	case strings.HasPrefix(u, "https://"):
		rest = u[len("https://"):]
	default:
		if i := strings.Index(u, "://"); i >= 0 {
			rest = u[i+3:]
		}
	}
	if len(rest) < len(u) { // skip the authority
		i := 0
		for i < len(rest) && rest[i] != '/' && rest[i] != '?' && rest[i] != '#' {
			i++
		}
		rest = rest[i:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		return rest[:i], rest[i+1:]
	}
	return rest, ""
}

// Depth is the number of segments of a path: "/" has none, "/a" and
// "/a/" one, "/a/b" two. A trailing slash adds no segment; empty segments
// inside ("/a//b": three) count, as a server sees them. An encoded slash
// (%2F) separates nothing.
func Depth(path string) int {
	n := strings.Count(path, "/")
	if strings.HasSuffix(path, "/") {
		n--
	}
	return max(n, 0)
}

// stackSegments is how many segments MostRepeated counts with tables on
// the stack; longer paths get tables from the heap.
const stackSegments = 64

var seed = maphash.MakeSeed()

// MostRepeated is how often the path's most frequent segment occurs in it,
// anywhere: 3 for "/a/b/a/c/a", 1 when every segment differs, 0 for "/".
// Segments are compared as written (a canonical path has one spelling per
// segment); the empty segment after a trailing slash is not one, inner
// empty segments are. Linear in the path's length.
func MostRepeated(path string) int {
	path = strings.TrimPrefix(path, "/")
	if path == "" {
		return 0
	}
	if path[len(path)-1] == '/' {
		path = path[:len(path)-1] // the trailing slash's empty segment
	}
	n := strings.Count(path, "/") + 1
	if n <= stackSegments {
		var slots [2 * stackSegments]int32
		var starts, ends, counts [stackSegments]int32
		return mostRepeated(path, slots[:], starts[:], ends[:], counts[:])
	}
	size := 2 * stackSegments
	for size < 2*n {
		size *= 2
	}
	return mostRepeated(path, make([]int32, size), make([]int32, n), make([]int32, n), make([]int32, n))
}

// mostRepeated counts the segments of path (no leading or trailing slash)
// in an open-addressing hash table: slots (a power of two, at least twice
// the segments) hold the index (+1) of the first segment of a spelling,
// placed by a seeded hash (no path can be made to collide on purpose); only
// segments that meet in a slot are compared.
func mostRepeated(path string, slots, starts, ends, counts []int32) int {
	mask := uint64(len(slots) - 1)
	best := 0
	for k, start := 0, 0; ; k++ {
		end := strings.IndexByte(path[start:], '/')
		if end < 0 {
			end = len(path)
		} else {
			end += start
		}
		seg := path[start:end]
		starts[k], ends[k] = int32(start), int32(end)
		h := maphash.String(seed, seg) & mask
		for {
			i := slots[h] - 1
			if i < 0 {
				slots[h], counts[k] = int32(k+1), 1
				best = max(best, 1)
				break
			}
			if path[starts[i]:ends[i]] == seg {
				counts[i]++
				best = max(best, int(counts[i]))
				break
			}
			h = (h + 1) & mask
		}
		if end == len(path) {
			return best
		}
		start = end + 1
	}
}

// CountParams is the number of parameters of a query (without its '?'):
// pieces between '&', empty ones not counted, repeated names counted each
// time ("a=1&a=2": two).
func CountParams(query string) int {
	n := 0
	for len(query) > 0 {
		i := strings.IndexByte(query, '&')
		if i < 0 {
			return n + 1
		}
		if i > 0 {
			n++
		}
		query = query[i+1:]
	}
	return n
}
