package dedup

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/internal/linkstream"
	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/splitter"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// BenchmarkDedupService measures URL checks per second through the whole
// dedup service — JetStream in, cache, Bloom filter, the seen set in the
// machine's Redis, JetStream out — on a link stream with the paper's
// locality, and the naive design in the same run: one Redis SADD of the URL
// string per URL, one round trip each. Run with -benchtime 1x.
// TRAWLER_BENCH_PAGES sets the number of pages (default 20,000, about 1.2
// million links).
func BenchmarkDedupService(b *testing.B) {
	addr := testredis.Addr(b)
	pages := 20_000
	if v := os.Getenv("TRAWLER_BENCH_PAGES"); v != "" {
		fmt.Sscan(v, &pages)
	}
	const P = 8
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		js, names := testbus.Start(b, P)
		ctx := context.Background()
		prefix := fmt.Sprintf("bench%08x", rand.Uint32())
		st, err := store.OpenRedis(ctx, []string{addr}, false, prefix)
		if err != nil {
			b.Fatal(err)
		}
		defer testredis.Drop(addr, prefix)
		defer st.Close()

		// The link stream, as parsers would send it: one message per
		// (page, partition), links canonical.
		ls := linkstream.New(linkstream.Options{Hosts: 2000, PagesPerHost: 500, Seed: 7})
		var msgs []*nats.Msg
		var ids []string
		var urls []string
		for p := 0; p < pages; p++ {
			page, links := ls.NextPage()
			var ll []messages.Link
			for _, l := range links {
				c, err := urlx.Canonicalize(l)
				if err != nil {
					b.Fatal(err)
				}
				ll = append(ll, messages.Link{URL: c, Depth: 1})
				urls = append(urls, c)
			}
			m, id := splitter.Split(names, P, messages.ViaLink, page, fmt.Sprintf("links:%d", p), ll)
			msgs, ids = append(msgs, m...), append(ids, id...)
		}

		all := []int{0, 1, 2, 3, 4, 5, 6, 7}
		svc := New(Options{JS: js, Names: names, Seen: st, Partitions: all, PartitionCount: P, MaxDeliver: 5,
			CachePolicy: "clock", CacheSize: 50_000, ExpectedURLs: len(urls), BloomFP: 0.01,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { svc.Run(runCtx); close(done) }()
		time.Sleep(200 * time.Millisecond) // warm-up of the empty Bloom filters

		b.StartTimer()
		start := time.Now()
		for j := 0; j < len(msgs); j += 1000 {
			end := min(j+1000, len(msgs))
			if err := bus.PublishAll(ctx, js, msgs[j:end], ids[j:end]); err != nil {
				b.Fatal(err)
			}
		}
		published := time.Since(start)
		stream, _ := js.Stream(ctx, names.StreamDiscovered())
		testutil.CheckFor(b, 10*time.Minute, 2*time.Millisecond, func() error {
			_, msgs, err := bus.WorkMsgs(ctx, stream, names.Keeper(names.StreamDiscovered()))
			if err != nil {
				return err
			}
			if msgs != 0 || svc.Stats.In.Load() != int64(len(urls)) {
				return fmt.Errorf("%d messages left, %d of %d URLs in", msgs, svc.Stats.In.Load(), len(urls))
			}
			return nil
		})
		elapsed := time.Since(start)
		b.StopTimer()
		stop()
		<-done

		// The naive design on a sample of the same stream.
		sample := urls[:min(len(urls), 50_000)]
		rc := redis.NewClient(&redis.Options{Addr: addr})
		naiveStart := time.Now()
		naiveNew := 0
		for _, u := range sample {
			n, err := rc.SAdd(ctx, prefix+":naive", u).Result()
			if err != nil {
				b.Fatal(err)
			}
			naiveNew += int(n)
		}
		naive := time.Since(naiveStart)
		rc.Close()

		rate := float64(len(urls)) / elapsed.Seconds()
		naiveRate := float64(len(sample)) / naive.Seconds()
		lookups := svc.Stats.CacheHits.Load() + svc.Stats.BloomAbsent.Load() + svc.Stats.BloomMaybe.Load() + svc.Stats.BloomCold.Load()
		b.ReportMetric(rate, "urls/s")
		b.ReportMetric(naiveRate, "naive-urls/s")
		b.ReportMetric(rate/naiveRate, "speedup")
		b.ReportMetric(100*float64(svc.Stats.CacheHits.Load())/float64(lookups), "cache-hit%")
		b.ReportMetric(100*float64(svc.Stats.SeenLookups.Load())/float64(len(urls)), "seen-lookup%")
		b.Logf("published in %s", published.Round(time.Millisecond))
		b.Logf("%d links in %d messages: %s, %.0f URLs/s (new %d, duplicate %d); naive SADD: %.0f URLs/s; %.1fx",
			len(urls), len(msgs), elapsed.Round(time.Millisecond), rate, svc.Stats.New.Load(), svc.Stats.Duplicate.Load(), naiveRate, rate/naiveRate)
	}
}
