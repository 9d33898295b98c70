package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trawlerhq/trawler/internal/config"
)

// RunPartitions is the all-in-one mode's partition count for a new data
// dir. Partitions exist to spread hosts over replicas; in one process each
// one costs a dedup and a frontier loop, their store commits and two NATS
// consumers whose state the embedded server writes ten times a second. Four
// keep both cores busy: on a 10,000-page crawl found by discovery (websim,
// 50 hosts, --out) 4 partitions gave 1.3-1.5x the pages per CPU-second of 32.
const RunPartitions = 4

// legacyPartitions is what a data dir made before crawl.json was written
// used: the flag's default then.
const legacyPartitions = 32

// crawlFile records, in the data dir, the settings a crawl must keep for
// its whole life.
type crawlFile struct {
	PartitionCount int `json:"partition_count"`
}

// settleRunPartitions returns the partition count of the crawl in cfg's data
// dir: the one it was started with, RunPartitions for a new one unless
// --partition-count says otherwise. A --partition-count that differs from the
// data dir's is an error: hosts would land in other partitions than their
// queued URLs.
func settleRunPartitions(cfg config.Config) (int, error) {
	path := filepath.Join(cfg.DataDir, "crawl.json")
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		var cf crawlFile
		if err := json.Unmarshal(data, &cf); err != nil || cf.PartitionCount < 1 {
			return 0, fmt.Errorf("%s is damaged (%v); it records the crawl's partition count: restore it, or start over with a new --data-dir", path, err)
		}
		if cfg.PartitionCountSet && cfg.PartitionCount != cf.PartitionCount {
			return 0, fmt.Errorf("--partition-count %d: the crawl in %s was started with %d, and a crawl keeps its partition count; drop the flag to resume, or use a new --data-dir",
				cfg.PartitionCount, cfg.DataDir, cf.PartitionCount)
		}
		return cf.PartitionCount, nil
	case !errors.Is(err, os.ErrNotExist):
		return 0, fmt.Errorf("--data-dir: %w", err)
	}
	n := cfg.PartitionCount
	if !cfg.PartitionCountSet {
		n = RunPartitions
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "store.db")); err == nil {
			n = legacyPartitions // a crawl begun before crawl.json existed
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return 0, fmt.Errorf("--data-dir: %w", err)
	}
	data, _ = json.Marshal(crawlFile{PartitionCount: n})
	tmp, err := os.CreateTemp(cfg.DataDir, ".crawl.json.*")
	if err != nil {
		return 0, fmt.Errorf("--data-dir: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("--data-dir: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("--data-dir: %w", err)
	}
	return n, nil
}
