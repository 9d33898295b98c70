package fetcher

// Sitemaps named by robots.txt (--sitemaps): queued as sitemap URLs, so
// that the frontier fetches them on the host's turns like any page and the
// parser reads them (pkg/sitemap) and sends their URLs through its link
// rules and the scope.

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// maxSitemapsPerRobots bounds the sitemaps one robots.txt queues: some
// list thousands (one per day of an archive).
const maxSitemapsPerRobots = 100

// announceSitemaps publishes the sitemaps robots.txt names on the task's
// own host to dedup, in the task's partition (the host's). A sitemap on
// another host is left out: the protocol allows it only for hosts that
// vouch for each other, which a crawler cannot check. A failure is logged:
// the crawl goes on by its links.
//
// A robots.txt that names none gives /sitemap.xml of the task's origin
// when GuessSitemap is set (where most sites keep it); a guess that is not
// there costs one request and a page record of its 404.
func (s *Service) announceSitemaps(ctx context.Context, task messages.FetchTask, urls []string) {
	source := "robots.txt of " + task.Host
	if len(urls) == 0 {
		if !s.o.GuessSitemap {
			return
		}
		u, err := url.Parse(task.URL)
		if err != nil {
			return
		}
		urls = []string{u.Scheme + "://" + u.Host + "/sitemap.xml"}
		source = "guessed for " + task.Host + " (robots.txt names no sitemap)"
	}
	var links []messages.Link
	for _, raw := range urls {
		u, err := urlx.Canonicalize(raw)
		if err != nil {
			s.o.Log.Warn("robots.txt names a sitemap that is not a URL; skipped", "host", task.Host, "sitemap", raw, "err", err)
			continue
		}
		if host, err := urlx.Host(u); err != nil || host != task.Host {
			continue
		}
		links = append(links, messages.Link{URL: u, Depth: task.Depth, Sitemap: true})
		if len(links) == maxSitemapsPerRobots {
			s.o.Log.Warn("robots.txt names more sitemaps than are read", "host", task.Host, "read", maxSitemapsPerRobots, "named", len(urls))
			break
		}
	}
	if len(links) == 0 {
		return
	}
	data, err := messages.Encode(&messages.Discovered{Partition: task.Partition, Via: messages.ViaSitemap, Source: source, Links: links})
	if err != nil {
		return
	}
	m := nats.NewMsg(s.o.Names.Discovered(task.Partition))
	m.Data = data
	id := fmt.Sprintf("sitemaps:%s:%d", task.Host, time.Now().Unix()/60)
	if err := bus.PublishAll(ctx, s.o.JS, []*nats.Msg{m}, []string{id}); err != nil {
		s.o.Log.Warn("queueing the sitemaps of robots.txt failed; the crawl goes on by links", "host", task.Host, "err", err)
		return
	}
	s.Stats.Sitemaps.Add(int64(len(links)))
}
