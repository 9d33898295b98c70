package record

import (
	"log/slog"

	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
)

// Full records the full trace: every fingerprint dedup receives, per
// partition in arrival order (repeats within a message, across messages and
// redeliveries included). It is a dedup.Observer. Safe for concurrent use.
type Full struct {
	*file
}

// OpenFull starts a new full trace file ("full-…") in dir for a crawl of
// partitionCount partitions; log (nil: none) hears where and of a failed
// write.
func OpenFull(dir string, partitionCount int, log *slog.Logger) (*Full, error) {
	f, err := create(dir, urltrace.Header{Kind: urltrace.Full, Partitions: max(partitionCount, 1)}, log)
	if err != nil {
		return nil, err
	}
	return &Full{file: f}, nil
}

// Fingerprints appends fps as received by partition.
func (f *Full) Fingerprints(partition int, fps []uint64) { f.write(partition, fps) }
