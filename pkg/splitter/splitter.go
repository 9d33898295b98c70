// Package splitter is Mercator's host splitter: it groups discovered URLs by
// the host partition that owns them, one Discovered message per partition, so
// a page's outlinks cost a few messages rather than one per URL.
package splitter

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

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
		data, _ := json.Marshal(messages.Discovered{V: messages.Version, Partition: p, Via: via, Source: source, Links: byPart[p]})
		m := nats.NewMsg(names.Discovered(p))
		m.Data = data
		msgs = append(msgs, m)
		ids = append(ids, fmt.Sprintf("%s:%d", idBase, p))
	}
	return msgs, ids
}
