package splitter

import (
	"sync/atomic"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/urltrace"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// CrossTrace records the paper's cross subtrace: the links the host splitter
// is asked to send to partitions other than their page's, before the Recent
// cache holds any back (so the trace is what that cache sees), filed under
// the page's partition. A nil *CrossTrace records nothing. Safe for
// concurrent use.
type CrossTrace struct {
	w          *urltrace.Writer
	partitions int
	failed     atomic.Bool
}

// OpenCrossTrace starts a new cross trace file in dir and returns its path.
func OpenCrossTrace(dir string, partitionCount int) (*CrossTrace, string, error) {
	partitionCount = max(partitionCount, 1)
	w, path, err := urltrace.Create(dir, urltrace.Header{Kind: urltrace.Cross, Partitions: partitionCount})
	if err != nil {
		return nil, "", err
	}
	return &CrossTrace{w: w, partitions: partitionCount}, path, nil
}

// Record appends the fingerprints of links on the page at source that
// belong to another partition; links without a host are skipped, as Split
// skips them. It returns the first write error once; tracing stops there and
// the crawl goes on.
func (c *CrossTrace) Record(source string, links []messages.Link) error {
	if c == nil || c.failed.Load() {
		return nil
	}
	host, err := urlx.Host(source)
	if err != nil {
		return nil // no partition to file the links under
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
	if err := c.w.Write(from, fps); err != nil && !c.failed.Swap(true) {
		return err
	}
	return nil
}

// Close flushes and closes the file.
func (c *CrossTrace) Close() error {
	if c == nil {
		return nil
	}
	return c.w.Close()
}
