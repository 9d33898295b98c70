package dedup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/cache"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

const testP = 4

// stream is a random link stream with many repeats: n links over k
// distinct URLs, grouped into messages of up to 40 links per partition.
func randomStream(seed uint64, n, k int) [][]string {
	r := rand.New(rand.NewPCG(seed, seed+1))
	var pages [][]string
	for n > 0 {
		size := min(1+r.IntN(60), n)
		page := make([]string, size)
		for i := range page {
			page[i] = fmt.Sprintf("http://h%d.example/p/%d", r.IntN(20), r.IntN(k))
		}
		pages = append(pages, page)
		n -= size
	}
	return pages
}

func publishPages(t *testing.T, js jetstream.JetStream, names subjects.Names, pages [][]string) {
	t.Helper()
	for _, page := range pages {
		byPart := map[int][]messages.Link{}
		for _, u := range page {
			h, _ := urlx.Host(u)
			p := urlx.Partition(h, testP)
			byPart[p] = append(byPart[p], messages.Link{URL: u, Depth: 1})
		}
		for p, links := range byPart {
			data, _ := json.Marshal(messages.Discovered{V: 1, Partition: p, Via: "link", Links: links})
			testbus.Publish(t, js, names.Discovered(p), data)
		}
	}
}

// forwarded drains the frontier's intake of every partition and counts
// each URL dedup sent as new.
func forwarded(t *testing.T, js jetstream.JetStream, names subjects.Names, into map[string]int) {
	t.Helper()
	for p := 0; p < testP; p++ {
		for {
			m := testbus.Next(t, js, names.StreamFrontier(), names.ConsumerFrontier(p), 100*time.Millisecond)
			if m == nil {
				break
			}
			var nu messages.NewURLs
			if err := messages.Decode(m.Data(), &nu); err != nil {
				t.Fatal(err)
			}
			for _, l := range nu.Links {
				into[l.URL]++
			}
		}
	}
}

func waitDrained(t *testing.T, js jetstream.JetStream, names subjects.Names) {
	t.Helper()
	st, _ := js.Stream(context.Background(), names.StreamDiscovered())
	testutil.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		_, msgs, err := bus.WorkMsgs(context.Background(), st, names.Keeper(names.StreamDiscovered()))
		if err != nil {
			return err
		}
		if msgs != 0 {
			return fmt.Errorf("discovered stream not drained: %d messages", msgs)
		}
		return nil
	})
}

func startDedup(t *testing.T, js jetstream.JetStream, names subjects.Names, seen store.SeenSet, policy, static string) (*Service, func()) {
	svc := New(Options{JS: js, Names: names, Seen: seen, Partitions: []int{0, 1, 2, 3}, PartitionCount: testP, MaxDeliver: 5,
		CachePolicy: policy, CacheSize: 200, StaticFile: static, ExpectedURLs: 10_000, BloomFP: 0.01,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	return svc, func() { cancel(); <-done }
}

func distinct(pages [][]string) map[string]bool {
	out := map[string]bool{}
	for _, p := range pages {
		for _, u := range p {
			out[u] = true
		}
	}
	return out
}

// Every policy, across a restart that rebuilds the Bloom filter from the
// seen set: each distinct URL is forwarded exactly once (no false drop, no
// duplicate), compared with an exact set.
func TestEveryPolicyForwardsEachURLOnceAcrossRestart(t *testing.T) {
	staticFile := filepath.Join(t.TempDir(), "static.txt")
	counts := map[uint64]int{}
	for _, p := range randomStream(99, 5000, 800) {
		for _, u := range p {
			counts[urlx.Fingerprint(u)]++
		}
	}
	f, _ := os.Create(staticFile)
	if err := cache.WriteStatic(f, counts, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for i, policy := range []string{"clock", "lru", "random", "static"} {
		t.Run(policy, func(t *testing.T) {
			js, names := testbus.Start(t, testP)
			st, err := store.OpenBolt(filepath.Join(t.TempDir(), "store.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			pages := randomStream(uint64(i+1), 6000, 1500)
			half := len(pages) / 2
			got := map[string]int{}

			_, stop := startDedup(t, js, names, st, policy, staticFile)
			publishPages(t, js, names, pages[:half])
			waitDrained(t, js, names)
			stop()
			forwarded(t, js, names, got)

			// A new replica: empty cache, Bloom filter rebuilt from the
			// seen set while it already serves.
			svc, stop := startDedup(t, js, names, st, policy, staticFile)
			publishPages(t, js, names, pages[half:])
			publishPages(t, js, names, pages[:half]) // all seen before
			waitDrained(t, js, names)
			stop()
			forwarded(t, js, names, got)

			want := distinct(pages)
			for u := range want {
				if got[u] != 1 {
					t.Errorf("%s forwarded %d times", u, got[u])
				}
			}
			if len(got) != len(want) {
				t.Errorf("forwarded %d distinct URLs, want %d", len(got), len(want))
			}
			if svc.Stats.BloomAbsent.Load() == 0 {
				t.Errorf("after warm-up the Bloom filter never proved a URL new: %+v", svc.Stats.BloomAbsent.Load())
			}
			t.Logf("%s: cache hits %d, bloom absent %d, maybe %d, cold %d, seen-set lookups %d",
				policy, svc.Stats.CacheHits.Load(), svc.Stats.BloomAbsent.Load(), svc.Stats.BloomMaybe.Load(),
				svc.Stats.BloomCold.Load(), svc.Stats.SeenLookups.Load())
		})
	}
}

// Redis restarts under a running dedup: it backs off and retries, and no URL
// is lost or forwarded twice.
func TestRedisRestartWhileRunning(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TRAWLER_CI") != "" {
			t.Fatal("redis-server not found in CI")
		}
		t.Skip("redis-server not installed")
	}
	port := freePort(t)
	dir := t.TempDir()
	startRedis := func() *exec.Cmd {
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--appendonly", "yes", "--appendfsync", "always", "--save", "")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testutil.CheckFor(t, 2*time.Second, 20*time.Millisecond, func() error {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				return fmt.Errorf("redis-server did not start: %w", err)
			}
			return c.Close()
		})
		return cmd
	}
	redisCmd := startRedis()
	defer func() { redisCmd.Process.Kill(); redisCmd.Wait() }()

	js, names := testbus.Start(t, testP)
	st, err := store.OpenRedis(context.Background(), []string{fmt.Sprintf("127.0.0.1:%d", port)}, false, "restart")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, stop := startDedup(t, js, names, st, "clock", "")
	defer stop()

	pages := randomStream(7, 8000, 2000)
	third := len(pages) / 3
	publishPages(t, js, names, pages[:third])
	waitDrained(t, js, names)

	redisCmd.Process.Kill() // hard stop: only what was fsynced survives
	redisCmd.Wait()
	publishPages(t, js, names, pages[third:2*third]) // arrives while Redis is down
	time.Sleep(500 * time.Millisecond)               // the outage under test: dedup keeps failing to reach Redis
	redisCmd = startRedis()
	publishPages(t, js, names, pages[2*third:])
	waitDrained(t, js, names)

	got := map[string]int{}
	forwarded(t, js, names, got)
	want := distinct(pages)
	for u := range want {
		if got[u] != 1 {
			t.Errorf("%s forwarded %d times", u, got[u])
		}
	}
	if len(got) != len(want) {
		t.Errorf("forwarded %d distinct URLs, want %d", len(got), len(want))
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
