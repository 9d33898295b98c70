package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A discovery crawl queues most of a web at once, many hosts interleaved in
// each batch, each host's URLs added at the end of its range. The queue's
// pages must end up nearly full, not at bbolt's default half: the store
// file is mapped, and its pages count in the crawl's memory
// (docs/benchmarks.md, "The queue's pages filled").
func TestQueuePagesFilledByAppends(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for batch := range 40 {
		var items []Queued
		for h := range 50 {
			items = append(items, queuedURLs(fmt.Sprintf("host%02d.example", h), batch*10, 10)...)
		}
		if _, err := b.Apply(ctx, 0, uint64(batch+1), items, nil); err != nil {
			t.Fatal(err)
		}
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		st := readPart(tx, 0).Bucket(bucketQueue).Stats()
		fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
		t.Logf("%d URLs in %d leaf pages, %.0f %% full", st.KeyN, st.LeafPageN, 100*fill)
		if st.KeyN != 20000 || fill < 0.8 {
			t.Errorf("%d URLs, leaf pages %.0f %% full; want 20000 and at least 80 %%", st.KeyN, 100*fill)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
