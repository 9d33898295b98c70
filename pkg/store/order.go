package store

import (
	"encoding/binary"
	"encoding/hex"
	"math"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// Limits bound what one host may take from a crawl, against spider traps
// and skew. Zero means unlimited.
type Limits struct {
	// HostBudget is the most URLs issued to fetchers per host over the
	// crawl's life; the rest of that host's queue is dropped.
	HostBudget int
	// HostQueue is the most URLs queued per host; beyond it the URL of
	// lowest priority is dropped (the queue lives in the store, so this is
	// a guard against traps, not against memory growth).
	HostQueue int
}

// rank orders a host's queue: a higher Score first (best-first), then a
// smaller Depth (breadth-first), then arrival order (the caller appends an
// order number). A crawl without scores is therefore breadth-first by depth.
// The score takes the high 48 bits (its float64 sort key, truncated: scores
// closer than ~1e-11 relative tie), the depth the low 16.
func rank(l messages.Link) uint64 {
	s := -l.Score
	if math.IsNaN(s) {
		s = 0
	}
	if s == 0 {
		s = 0 // -0 sorts like 0
	}
	bits := math.Float64bits(s)
	if s >= 0 {
		bits ^= 1 << 63
	} else {
		bits = ^bits
	}
	return bits&^0xffff | uint64(min(max(l.Depth, 0), 0xffff))
}

// rankHex is rank as 16 hex digits: the Redis queues sort members
// lexicographically, which then sorts like the number.
func rankHex(l messages.Link) string { return rankHexOf(rank(l)) }

func rankHexOf(r uint64) string {
	return hex.EncodeToString(binary.BigEndian.AppendUint64(nil, r))
}
