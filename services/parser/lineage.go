package parser

import (
	"sync"

	"github.com/trawlerhq/trawler/pkg/topic"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// lineage remembers, for the links this parser queued, what a topical
// crawl needs again when the linked page comes back to be parsed: the score
// the link was given (SharkSearch's inheritance; the score a redirect's
// target keeps) and how many irrelevant pages it may still cross. The
// fetched-page message does not carry them, so a page whose link was queued
// by another replica, or before a restart, is treated as unknown (a fresh
// depth bound and an inherited score of 0).
//
// It is bounded: two generations of at most size entries each; when the
// current one fills up, the older is dropped.
type lineage struct {
	mu       sync.Mutex
	size     int
	cur, old map[uint64]ancestry
}

type ancestry struct {
	score     float32
	depthLeft int16
}

func newLineage(size int) *lineage {
	return &lineage{size: size, cur: make(map[uint64]ancestry), old: map[uint64]ancestry{}}
}

// parent returns what the page at url inherited, given its relevance.
func (l *lineage) parent(url string, relevance float64, s *topic.Scorer) topic.Parent {
	p := topic.Parent{Relevance: relevance, DepthLeft: s.SeedDepth()}
	if l == nil {
		return p
	}
	fp := urlx.Fingerprint(url)
	l.mu.Lock()
	a, ok := l.cur[fp]
	if !ok {
		a, ok = l.old[fp]
	}
	l.mu.Unlock()
	if ok {
		p.Score, p.DepthLeft = float64(a.score), int(a.depthLeft)
	}
	return p
}

// remember records a queued link's score and depth bound.
func (l *lineage) remember(url string, score float64, depthLeft int) {
	if l == nil {
		return
	}
	fp := urlx.Fingerprint(url)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.cur) >= l.size {
		l.old, l.cur = l.cur, make(map[uint64]ancestry, l.size)
	}
	l.cur[fp] = ancestry{score: float32(score), depthLeft: int16(max(min(depthLeft, 1<<14), -1))}
}
