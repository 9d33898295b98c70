// Package splitter is Mercator's host splitter: it groups discovered URLs by
// the host partition that owns them, one Discovered message per partition, so
// a page's outlinks cost a few messages rather than one per URL.
package splitter

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/cache"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// Split groups canonical links by partition into one Discovered
// message each, with IDs "<idBase>:<partition>" for de-duplication. It is how
// every producer (seed, parser, reroute) hands URLs to dedup.
func Split(names subjects.Names, partitionCount int, via, source, idBase string, links []messages.Link) ([]*nats.Msg, []string) {
	byPart := map[int][]messages.Link{}
	var order []int
	for _, l := range links {
		host, err := urlx.Host(l.URL)
		if err != nil {
			continue
		}
		p := urlx.Partition(host, partitionCount)
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], l)
	}
	var msgs []*nats.Msg
	var ids []string
	for _, p := range order {
		data, _ := messages.Encode(&messages.Discovered{Partition: p, Via: via, Source: source, Links: byPart[p]})
		m := nats.NewMsg(names.Discovered(p))
		m.Data = data
		msgs = append(msgs, m)
		ids = append(ids, fmt.Sprintf("%s:%d", idBase, p))
	}
	return msgs, ids
}

// Recent is the paper's second cache, on the sending side of the host
// splitter: links sent recently are not sent again, which saves most of the
// traffic to other partitions (a page's links repeat each other and the
// links of pages before it). Safe for concurrent use.
type Recent struct {
	mu    sync.Mutex
	cache cache.Cache // guarded by mu

	// Sent and Dropped count links handed on and links held back.
	Sent, Dropped atomic.Int64
}

// NewRecent returns a cache of the size most recently sent links (CLOCK).
func NewRecent(size int) (*Recent, error) {
	c, err := cache.New("clock", size)
	if err != nil {
		return nil, err
	}
	return &Recent{cache: c}, nil
}

// Filter drops links sent recently. Call Commit with the kept links once
// they are published: a link is remembered only after it is safely on its
// way, so a failed publish is retried in full.
func (r *Recent) Filter(links []messages.Link) []messages.Link {
	if r == nil {
		return links
	}
	kept := links[:0:0]
	r.mu.Lock()
	for _, l := range links {
		if r.cache.Lookup(urlx.Fingerprint(l.URL)) {
			r.Dropped.Add(1)
			continue
		}
		kept = append(kept, l)
	}
	r.mu.Unlock()
	return kept
}

// Commit remembers links that were published.
func (r *Recent) Commit(links []messages.Link) {
	if r == nil {
		return
	}
	r.mu.Lock()
	for _, l := range links {
		r.cache.Insert(urlx.Fingerprint(l.URL))
	}
	r.mu.Unlock()
	r.Sent.Add(int64(len(links)))
}
