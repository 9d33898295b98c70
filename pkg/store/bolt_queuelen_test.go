package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlerhq/trawler/pkg/messages"
)

func queuedURLs(host string, from, n int) []Queued {
	out := make([]Queued, n)
	for i := range out {
		out[i] = Queued{Host: host, Link: messages.Link{URL: fmt.Sprintf("http://%s/%d", host, from+i)}}
	}
	return out
}

// checkQueueCounts compares every host's kept count with a scan of its
// queue.
func checkQueueCounts(t *testing.T, b *Bolt, p int, want map[string]int) {
	t.Helper()
	err := b.db.View(func(tx *bolt.Tx) error {
		part := readPart(tx, p)
		for host, n := range want {
			got := 0
			if v := part.Bucket(bucketQueueLen).Get([]byte(host)); len(v) == 8 {
				got = int(binary.BigEndian.Uint64(v))
			}
			if scan := queueLen(part.Bucket(bucketQueue), host); got != n || scan != n {
				t.Errorf("host %s: count %d, queue %d; want %d", host, got, scan, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The per-host counts the queue cap reads follow every way a queue changes:
// enqueue (and the cap's push-out), pop, a lease's expiry requeueing its
// URL, a budget's drop; a file written before counts were kept is counted
// once by a scan.
func TestQueueCountsFollowTheQueue(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	const p = 1
	seq := uint64(0)
	apply := func(enq []Queued, done []Done) {
		t.Helper()
		seq++
		if _, err := b.Apply(ctx, p, seq, enq, done); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	pop := func(host, id string) []InFlight {
		t.Helper()
		in, err := b.Pop(ctx, p, []Issue{{Host: host, TaskID: id, IssuedAt: now, Deadline: now.Add(time.Minute), LeaseUntil: now.Add(time.Minute)}})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	b.SetLimits(Limits{HostQueue: 5})
	apply(append(queuedURLs("a", 0, 7), queuedURLs("b", 0, 1)...), nil)
	checkQueueCounts(t, b, p, map[string]int{"a": 5, "b": 1})

	if len(pop("a", "t1")) != 1 {
		t.Fatal("nothing popped")
	}
	checkQueueCounts(t, b, p, map[string]int{"a": 4})
	if requeued, err := b.Expire(ctx, p, "a", "t1", 3); err != nil || !requeued {
		t.Fatalf("Expire: %v, requeued %v", err, requeued)
	}
	checkQueueCounts(t, b, p, map[string]int{"a": 5})

	// A file of before the counts: the first change counts by a scan.
	if err := b.db.Update(func(tx *bolt.Tx) error { return readPart(tx, p).DeleteBucket(bucketQueueLen) }); err != nil {
		t.Fatal(err)
	}
	apply(queuedURLs("b", 1, 2), nil)
	checkQueueCounts(t, b, p, map[string]int{"b": 3})

	// The budget drops the rest of a host's queue at its next pop.
	pop("b", "t2")
	apply(nil, []Done{{Host: "b", TaskID: "t2"}})
	b.SetLimits(Limits{HostQueue: 5, HostBudget: 1})
	if got := pop("b", "t3"); len(got) != 0 {
		t.Fatalf("popped %v over the budget", got)
	}
	checkQueueCounts(t, b, p, map[string]int{"b": 0})
}

// BenchmarkEnqueueOnALongQueue: adding a URL to a host with many queued
// costs the same as to a short queue (it scanned the queue when the cap was
// checked by counting).
func BenchmarkEnqueueOnALongQueue(b *testing.B) {
	for _, queued := range []int{100, 20000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			s, err := OpenBolt(filepath.Join(b.TempDir(), "s.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.SetLimits(Limits{HostQueue: 100000})
			ctx := context.Background()
			seq := uint64(1)
			if _, err := s.Apply(ctx, 0, seq, queuedURLs("a", 0, queued), nil); err != nil {
				b.Fatal(err)
			}
			i := queued
			for b.Loop() {
				seq++
				if _, err := s.Apply(ctx, 0, seq, queuedURLs("a", i, 10), nil); err != nil {
					b.Fatal(err)
				}
				i += 10
			}
		})
	}
}
