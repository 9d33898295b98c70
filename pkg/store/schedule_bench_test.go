package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// BenchmarkScheduleBytes measures what a continuous crawl's revisit
// schedule costs per URL: 20,000 URLs of 200 hosts, each with the record a
// revisit keeps (ETag, Last-Modified, digest, since, interval), scheduled
// through done reports as the frontier does. bytes/url is Redis's MEMORY
// USAGE of the two schedule keys, and for bbolt the growth of the file's
// data (the transaction's size) per URL.
//
//	go test -run '^$' -bench ScheduleBytes -benchtime 1x ./pkg/store/
func BenchmarkScheduleBytes(b *testing.B) {
	const urls, hosts = 20000, 200
	entries := make([]Scheduled, urls)
	now := time.Now()
	for i := range entries {
		host := fmt.Sprintf("host%03d.example.org", i%hosts)
		entries[i] = Scheduled{Due: now.Add(time.Duration(i) * time.Second), Queued: Queued{Host: host, Attempt: 1, Link: messages.Link{
			URL: fmt.Sprintf("https://%s/docs/section-%d/page-%d.html", host, i%37, i), Depth: 3,
			Revisit: &messages.Revisit{Visits: 4, Interval: 26 * time.Hour, ETag: `W/"5e1f-18f2a1c9e4d"`,
				LastModified: "Tue, 03 Nov 2026 08:12:44 GMT", Digest: "sha1:2FQ3MZJXR6WQYVLNL4KXHUUDTNDEZ3OB", Since: now.UTC()},
		}}}
	}
	measure := func(b *testing.B, s Store, size func() int64) {
		ctx := context.Background()
		const p = 0
		for n := 0; n < b.N; n++ {
			before := size()
			for i := 0; i < urls; i += 500 {
				done := make([]Done, 0, 500)
				for j := i; j < i+500; j++ {
					done = append(done, Done{Host: entries[j].Queued.Host, TaskID: "none", Revisit: &entries[j]})
				}
				// The done reports name no task in flight: on bbolt they
				// free nothing and schedule nothing, so schedule directly.
				if bs, ok := s.(*Bolt); ok {
					if err := bs.update(func(tx *bolt.Tx) error {
						part, err := writePart(tx, p)
						if err != nil {
							return err
						}
						for _, d := range done {
							if _, err := scheduleTx(part, *d.Revisit); err != nil {
								return err
							}
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if err := s.(*Redis).scheduleDone(ctx, p, done); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size()-before)/urls, "bytes/url")
		}
	}
	b.Run("redis", func(b *testing.B) {
		s := redisBackend([]string{redisAddr(b)})(b)().(*Redis)
		c := redis.NewClient(&redis.Options{Addr: redisAddr(b)})
		defer c.Close()
		measure(b, s, func() int64 {
			var total int64
			for _, k := range []string{s.schedKey(0), s.schedDataKey(0)} {
				n, err := c.MemoryUsage(context.Background(), k, 0).Result()
				if err == nil {
					total += n
				}
			}
			return total
		})
	})
	b.Run("bolt", func(b *testing.B) {
		s := boltBackend(b)().(*Bolt)
		measure(b, s, func() int64 {
			var size int64
			_ = s.view(func(tx *bolt.Tx) error {
				part := readPart(tx, 0)
				if part == nil {
					return nil
				}
				for _, name := range [][]byte{bucketSched, bucketSchedURL} {
					st := part.Bucket(name).Stats()
					size += int64(st.LeafInuse + st.BranchInuse)
				}
				return nil
			})
			return size
		})
	})
}
