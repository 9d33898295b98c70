package record

import (
	"log/slog"

	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// Cross records the paper's cross subtrace: the links the host splitter is
// asked to send to partitions other than their page's, before the parser's
// recent-links cache holds any back (so the trace is what that cache sees),
// filed under the page's partition. It is a parser.Observer. Safe for
// concurrent use.
type Cross struct {
	*file
	partitions int
}

// OpenCross starts a new cross trace file ("cross-…") in dir for a crawl of
// partitionCount partitions; log (nil: none) hears where and of a failed
// write.
func OpenCross(dir string, partitionCount int, log *slog.Logger) (*Cross, error) {
	partitionCount = max(partitionCount, 1)
	f, err := create(dir, urltrace.Header{Kind: urltrace.Cross, Partitions: partitionCount}, log)
	if err != nil {
		return nil, err
	}
	return &Cross{file: f, partitions: partitionCount}, nil
}

// Links appends the fingerprints of links on the page at source that belong
// to another partition; links without a host are skipped, as the splitter
// skips them.
func (c *Cross) Links(source string, links []messages.Link) {
	if c.failed.Load() {
		return
	}
	host, err := urlx.Host(source)
	if err != nil {
		return // no partition to file the links under
	}
	from := urlx.Partition(host, c.partitions)
	var fps []uint64
	for _, l := range links {
		h, err := urlx.Host(l.URL)
		if err != nil || urlx.Partition(h, c.partitions) == from {
			continue
		}
		fps = append(fps, urlx.Fingerprint(l.URL))
	}
	c.write(from, fps)
}
