package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testredis"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// ---- the conformance suite, run against every backend ----

func runSuite(t *testing.T, newStore backend) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open opener)
	}{
		{"SeenRecord", testSeenRecord},
		{"SeenProperty", testSeenProperty},
		{"ScanCount", testScanCount},
		{"SeenFormat", testSeenFormat},
		{"ApplyReplay", testApplyReplay},
		{"Step", testStep},
		{"IntakeLog", testIntakeLog},
		{"FIFO", testFIFO},
		{"Order", testOrder},
		{"HostBudget", testHostBudget},
		{"HostQueueCap", testHostQueueCap},
		{"NotBefore", testNotBefore},
		{"StaleDone", testStaleDone},
		{"PopSkips", testPopSkips},
		{"Expire", testExpire},
		{"Reopen", testReopen},
		{"Budget", testBudget},
		{"BudgetConcurrent", testBudgetConcurrent},
		{"Stats", testStats},
		{"BadArgs", testBadArgs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

func TestBolt(t *testing.T) { runSuite(t, boltBackend) }

func TestRedis(t *testing.T) {
	runSuite(t, redisBackend([]string{redisAddr(t)}))
}

// TestMiniredis runs the suite on an in-process miniredis: the fallback of
// the Redis tests when no Redis answers, and its Lua (gopher-lua) is not
// Redis's.
func TestMiniredis(t *testing.T) {
	runSuite(t, redisBackendMode([]string{miniredis.RunT(t).Addr()}, false, withReadTimeout(time.Minute)))
}

// TestRing runs the suite on a client-side Ring of two throwaway Redis
// servers and checks that every key of a partition lands on one shard.
func TestRing(t *testing.T) {
	addrs := []string{testredis.StartServer(t), testredis.StartServer(t)}
	runSuite(t, redisBackend(addrs))

	t.Run("PartitionOnOneShard", func(t *testing.T) { checkPlacement(t, addrs, false, 16) })
}

// TestCluster runs the suite on a 3-master Redis Cluster: every script and
// pipeline must respect slot rules, and partitions must spread over nodes.
func TestCluster(t *testing.T) {
	addrs := testredis.StartCluster(t, 3)
	runSuite(t, redisBackendMode(addrs, true))
	t.Run("PartitionOnOneNode", func(t *testing.T) { checkPlacement(t, addrs, true, 48) })
}

// checkPlacement fills parts partitions and checks that every key of a
// partition sits on one shard or node and that every shard got some.
func checkPlacement(t *testing.T, addrs []string, cluster bool, parts int) {
	prefix := randomPrefix(t)
	t.Cleanup(func() { deleteKeys(t, addrs, prefix) })
	s, err := OpenRedis(context.Background(), addrs, cluster, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p := range parts {
		fillPartition(t, s, p)
	}
	mustBudget(t, s, 1, 0)

	shardsOf := map[string]map[string]bool{} // hash tag -> shards
	kinds := map[string]map[string]bool{}    // hash tag -> key kinds
	perShard := map[string]int{}
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		keys, err := scanKeys(context.Background(), c, prefix)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			tag, kind := splitKey(t, prefix, k)
			if shardsOf[tag] == nil {
				shardsOf[tag], kinds[tag] = map[string]bool{}, map[string]bool{}
			}
			shardsOf[tag][addr] = true
			kinds[tag][kind] = true
			perShard[addr]++
		}
	}
	if len(shardsOf) != parts+1 {
		t.Errorf("got %d hash tags, want %d partitions + global", len(shardsOf), parts)
	}
	for tag, shards := range shardsOf {
		if len(shards) != 1 {
			t.Errorf("keys of %s are spread over %d shards", tag, len(shards))
		}
		if tag != prefix+":global" && !(kinds[tag]["seen"] && kinds[tag]["hosts"] && kinds[tag]["q"] && kinds[tag]["inflight"] && kinds[tag]["meta"]) {
			t.Errorf("%s has key kinds %v, want seen, hosts, q, inflight, meta", tag, kinds[tag])
		}
	}
	for _, addr := range addrs {
		if perShard[addr] == 0 {
			t.Errorf("shard %s got no keys: nothing was sharded", addr)
		}
	}
}

// fillPartition creates every kind of key in partition p.
func fillPartition(t *testing.T, s Store, p int) {
	ctx := context.Background()
	if err := s.Record(ctx, p, []uint64{uint64(p)}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, p, 1, []Queued{q("a.example", "http://a.example/1"), q("a.example", "http://a.example/2")}, nil)
	mustPop(t, s, p, issue("a.example", "t1"))
}

// splitKey returns the hash tag and the kind (seen, q, meta...) of a key.
func splitKey(t *testing.T, prefix, key string) (tag, kind string) {
	rest, ok := strings.CutPrefix(key, prefix+":{")
	if !ok {
		t.Fatalf("key %q lacks the prefix and hash tag", key)
	}
	tag, rest, ok = strings.Cut(rest, "}:")
	if !ok {
		t.Fatalf("key %q: unterminated hash tag", key)
	}
	kind, _, _ = strings.Cut(rest, ":")
	return tag, kind
}

func testSeenRecord(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	const p = 3
	if got := mustSeen(t, s, p, nil); len(got) != 0 {
		t.Errorf("Seen(nil) = %v", got)
	}
	if got := mustSeen(t, s, p, []uint64{1, 2, 3}); !slices.Equal(got, []bool{false, false, false}) {
		t.Errorf("Seen on empty set = %v", got)
	}
	if err := s.Record(ctx, p, []uint64{1, 2, 2, 3, 1, 0, math.MaxUint64}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, p, []uint64{3, 4, 4}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	got := mustSeen(t, s, p, []uint64{0, 1, 2, 3, 4, 5, 1, math.MaxUint64, math.MaxUint64 - 1, 4})
	want := []bool{true, true, true, true, true, false, true, true, false, true}
	if !slices.Equal(got, want) {
		t.Errorf("Seen = %v, want %v", got, want)
	}
	if got := mustSeen(t, s, p+1, []uint64{1, 2}); !slices.Equal(got, []bool{false, false}) {
		t.Errorf("another partition sees %v", got)
	}

	// A batch larger than one Redis command chunk, with repeats.
	rng := rand.New(rand.NewPCG(1, 2))
	fps := make([]uint64, 3*seenChunk+17)
	for i := range fps {
		fps[i] = rng.Uint64()
	}
	known := fps[:len(fps)/2]
	if err := s.Record(ctx, p, append(slices.Clone(known), known[:100]...)); err != nil {
		t.Fatal(err)
	}
	got = mustSeen(t, s, p, fps)
	for i, seen := range got {
		if seen != (i < len(known)) {
			t.Fatalf("big batch: Seen[%d] = %v, want %v", i, seen, i < len(known))
		}
	}
}

func testApplyReplay(t *testing.T, open opener) {
	s := open()
	const p = 5
	if mustApply(t, s, p, 0, []Queued{q("a", "http://a/0")}, nil) {
		t.Error("seq 0 applied on a fresh partition: not above applied 0")
	}
	if !mustApply(t, s, p, 5, []Queued{q("a", "http://a/1"), q("a", "http://a/2")}, nil) {
		t.Fatal("first batch not applied")
	}
	if mustApply(t, s, p, 5, []Queued{q("a", "http://a/x")}, nil) {
		t.Error("same seq applied twice")
	}
	if mustApply(t, s, p, 4, []Queued{q("b", "http://b/x")}, nil) {
		t.Error("lower seq applied")
	}
	st := mustLoad(t, s, p)
	if st.Applied != 5 || len(st.Hosts) != 1 || st.Hosts[0].Queued != 2 {
		t.Errorf("after replays: %s", dump(st))
	}
	if !mustApply(t, s, p, 9, []Queued{q("b", "http://b/1")}, nil) {
		t.Fatal("higher seq not applied")
	}
	if !mustApply(t, s, p, 10, nil, nil) {
		t.Error("empty batch not applied")
	}
	if st := mustLoad(t, s, p); st.Applied != 10 || len(st.Hosts) != 2 {
		t.Errorf("after seq 10: %s", dump(st))
	}
	wantStats(t, s, []int{p}, Stats{Queued: 3, Enqueued: 3})
	// Large sequences compare exactly (Redis compares them as strings).
	if !mustApply(t, s, p, math.MaxUint64-1, nil, nil) || mustApply(t, s, p, math.MaxUint64-2, nil, nil) {
		t.Error("large sequences misordered")
	}
	if st := mustLoad(t, s, p); st.Applied != math.MaxUint64-1 {
		t.Errorf("Applied = %d", st.Applied)
	}
}

func testFIFO(t *testing.T, open opener) {
	s := open()
	const p = 1
	mustApply(t, s, p, 1, []Queued{
		{Host: "a", Link: messages.Link{URL: "http://a/1", Depth: 1, Hops: 1}},
		q("b", "http://b/1"),
		q("a", "http://a/2"),
	}, nil)
	mustApply(t, s, p, 2, []Queued{q("a", "http://a/3")}, nil)

	iss := issue("a", "t-a1")
	got := mustPop(t, s, p, iss)
	if len(got) != 1 {
		t.Fatalf("Pop = %s", dump(got))
	}
	want := InFlight{
		Task: messages.FetchTask{
			V: messages.Version, ID: "t-a1", Partition: p, Host: "a", URL: "http://a/1",
			Depth: 1, Hops: 1, Attempt: 1, IssuedAt: iss.IssuedAt, Deadline: iss.Deadline,
		},
		LeaseUntil: iss.LeaseUntil,
	}
	if dump(got[0]) != dump(want) {
		t.Errorf("task = %s\nwant   %s", dump(got[0]), dump(want))
	}
	seq := uint64(3)
	done := func(host, id string) {
		mustApply(t, s, p, seq, nil, []Done{{Host: host, TaskID: id}})
		seq++
	}
	done("a", "t-a1")
	var urls []string
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		in := mustPop(t, s, p, issue("a", id))
		if len(in) == 0 {
			break
		}
		urls = append(urls, in[0].Task.URL)
		done("a", id)
	}
	if want := []string{"http://a/2", "http://a/3"}; !slices.Equal(urls, want) {
		t.Errorf("host a popped %v, want %v", urls, want)
	}
	if in := mustPop(t, s, p, issue("b", "tb")); len(in) != 1 || in[0].Task.URL != "http://b/1" {
		t.Errorf("host b: %s", dump(in))
	}
}

func testStaleDone(t *testing.T, open opener) {
	s := open()
	const p = 2
	mustApply(t, s, p, 1, []Queued{q("a", "http://a/1"), q("a", "http://a/2"), q("b", "http://b/1")}, nil)
	mustPop(t, s, p, issue("a", "t1"), issue("b", "tb"))

	// Wrong task ID and unknown host: both ignored, the batch still applies.
	if !mustApply(t, s, p, 2, nil, []Done{{Host: "a", TaskID: "t0"}, {Host: "zzz", TaskID: "t1"}}) {
		t.Fatal("batch with stale dones not applied")
	}
	if in := mustPop(t, s, p, issue("a", "t2")); len(in) != 0 {
		t.Errorf("stale done freed the host: %s", dump(in))
	}
	wantStats(t, s, []int{p}, Stats{Queued: 1, InFlight: 2, Enqueued: 3})
	st := mustLoad(t, s, p)
	if len(st.Hosts) != 2 || st.Hosts[0].InFlight == nil || st.Hosts[0].InFlight.Task.ID != "t1" || st.Hosts[0].Queued != 1 {
		t.Errorf("after stale done: %s", dump(st))
	}

	// The matching done frees a; b gets a new URL and is freed in one batch.
	mustApply(t, s, p, 3, []Queued{q("b", "http://b/2")}, []Done{{Host: "a", TaskID: "t1"}, {Host: "b", TaskID: "tb"}})
	wantStats(t, s, []int{p}, Stats{Queued: 2, InFlight: 0, Enqueued: 4})
	st = mustLoad(t, s, p)
	if len(st.Hosts) != 2 || st.Hosts[0].InFlight != nil || st.Hosts[1].InFlight != nil ||
		st.Hosts[0].Queued != 1 || st.Hosts[1].Queued != 1 {
		t.Errorf("after done: %s", dump(st))
	}
	in := mustPop(t, s, p, issue("a", "t3"), issue("b", "t4"))
	if len(in) != 2 || in[0].Task.URL != "http://a/2" || in[1].Task.URL != "http://b/2" {
		t.Errorf("Pop after done: %s", dump(in))
	}
	// Freeing the last task of a host with an empty queue makes it idle.
	mustApply(t, s, p, 4, nil, []Done{{Host: "a", TaskID: "t3"}, {Host: "b", TaskID: "t4"}})
	if st := mustLoad(t, s, p); len(st.Hosts) != 0 {
		t.Errorf("idle hosts still loaded: %s", dump(st))
	}
}

func testPopSkips(t *testing.T, open opener) {
	s := open()
	const p = 4
	mustApply(t, s, p, 1, []Queued{q("a", "http://a/1"), q("a", "http://a/2"), q("c", "http://c/1"), q("c", "http://c/2")}, nil)
	mustPop(t, s, p, issue("c", "tc"))
	if got := mustPop(t, s, p); len(got) != 0 {
		t.Errorf("Pop() = %s", dump(got))
	}
	got := mustPop(t, s, p, issue("b", "tb"), issue("a", "ta"), issue("c", "tc2"), issue("a", "ta2"), issue("", "te"))
	if len(got) != 1 || got[0].Task.ID != "ta" || got[0].Task.URL != "http://a/1" {
		t.Errorf("Pop = %s, want only a/1 as ta", dump(got))
	}
	wantStats(t, s, []int{p}, Stats{Queued: 2, InFlight: 2, Enqueued: 4})
	st := mustLoad(t, s, p)
	if len(st.Hosts) != 2 || st.Hosts[1].InFlight.Task.ID != "tc" || st.Hosts[1].Queued != 1 {
		t.Errorf("Load = %s", dump(st))
	}
}

func testExpire(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	const p, maxAttempts = 6, 3
	mustApply(t, s, p, 1, []Queued{
		{Host: "a", Link: messages.Link{URL: "http://a/1", Depth: 1, Hops: 2}},
		q("a", "http://a/2"),
	}, nil)
	mustPop(t, s, p, issue("a", "t1"))

	expire := func(host, id string, want bool) {
		t.Helper()
		got, err := s.Expire(ctx, p, host, id, maxAttempts)
		if err != nil || got != want {
			t.Fatalf("Expire(%s, %s) = %v, %v; want %v", host, id, got, err, want)
		}
	}
	expire("a", "wrong", false)
	expire("nobody", "t1", false)
	wantStats(t, s, []int{p}, Stats{Queued: 1, InFlight: 1, Enqueued: 2})

	// Requeued at the head, with Attempt+1 and its depth and hops.
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if attempt > 1 {
			in := mustPop(t, s, p, issue("a", fmt.Sprintf("t%d", attempt)))
			if len(in) != 1 {
				t.Fatalf("attempt %d: nothing popped", attempt)
			}
			tk := in[0].Task
			if tk.URL != "http://a/1" || tk.Attempt != attempt || tk.Depth != 1 || tk.Hops != 2 {
				t.Fatalf("attempt %d: task %s", attempt, dump(tk))
			}
		}
		expire("a", fmt.Sprintf("t%d", attempt), attempt < maxAttempts)
		expire("a", fmt.Sprintf("t%d", attempt), false) // already handled
	}
	// Dropped after maxAttempts; the host is free for the next URL.
	wantStats(t, s, []int{p}, Stats{Queued: 1, InFlight: 0, Enqueued: 2})
	in := mustPop(t, s, p, issue("a", "t9"))
	if len(in) != 1 || in[0].Task.URL != "http://a/2" || in[0].Task.Attempt != 1 {
		t.Fatalf("after drop: %s", dump(in))
	}
	got, err := s.Expire(ctx, p, "a", "t9", 1)
	if err != nil || got {
		t.Fatalf("Expire with maxAttempts 1 = %v, %v; want dropped", got, err)
	}
	if st := mustLoad(t, s, p); len(st.Hosts) != 0 {
		t.Errorf("host still loaded after its last URL was dropped: %s", dump(st))
	}
	wantStats(t, s, []int{p}, Stats{Enqueued: 2})
}

func testReopen(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	parts := []int{0, 7}
	for _, p := range parts {
		if err := s.Record(ctx, p, []uint64{10, 20, uint64(p)}); err != nil {
			t.Fatal(err)
		}
		mustApply(t, s, p, 3, []Queued{q("a", "http://a/1"), q("a", "http://a/2"), q("b", "http://b/1"), q("a", "http://a/3")}, nil)
		mustPop(t, s, p, issue("a", "ta"))
		mustApply(t, s, p, 4, []Queued{q("c", "http://c/1")}, nil)
	}
	mustBudget(t, s, 5, 0)
	before := map[int]string{}
	for _, p := range parts {
		before[p] = dump(mustLoad(t, s, p))
	}
	stats := mustStats(t, s, parts)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seen(ctx, 0, []uint64{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Seen after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Apply(ctx, 0, 99, nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Count(ctx, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Count after Close: %v, want ErrClosed", err)
	}
	if err := s.Scan(ctx, 0, func([]uint64) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Scan after Close: %v, want ErrClosed", err)
	}

	s = open()
	for _, p := range parts {
		if after := dump(mustLoad(t, s, p)); after != before[p] {
			t.Errorf("partition %d after reopen:\n%s\nwant\n%s", p, after, before[p])
		}
		if got := mustSeen(t, s, p, []uint64{10, 20, 30}); !slices.Equal(got, []bool{true, true, false}) {
			t.Errorf("Seen after reopen = %v", got)
		}
		if got := mustCount(t, s, p); got != 3 {
			t.Errorf("Count after reopen = %d, want 3", got)
		}
	}
	wantStats(t, s, parts, stats)

	// Work goes on where it stopped: appends after the old tail, a requeue
	// before the old head.
	p := parts[1]
	mustApply(t, s, p, 5, []Queued{q("a", "http://a/4")}, nil)
	if requeued, err := s.Expire(ctx, p, "a", "ta", 2); err != nil || !requeued {
		t.Fatalf("Expire after reopen = %v, %v", requeued, err)
	}
	var urls []string
	for i := range 6 {
		id := fmt.Sprintf("r%d", i)
		in := mustPop(t, s, p, issue("a", id))
		if len(in) == 0 {
			break
		}
		urls = append(urls, in[0].Task.URL)
		mustApply(t, s, p, uint64(10+i), nil, []Done{{Host: "a", TaskID: id}})
	}
	if want := []string{"http://a/1", "http://a/2", "http://a/3", "http://a/4"}; !slices.Equal(urls, want) {
		t.Errorf("after reopen host a popped %v, want %v", urls, want)
	}
	if got := mustBudget(t, s, 1, 0); got != 1 || mustStats(t, s, nil).Issued != 6 {
		t.Errorf("budget not kept across reopen")
	}
}

func testBudget(t *testing.T, open opener) {
	s := open()
	steps := []struct{ n, max, want int }{
		{3, 0, 3},   // unlimited, still counted
		{0, 10, 0},  // nothing asked
		{-2, 10, 0}, // nonsense asked
		{5, 10, 5},
		{5, 10, 2}, // only 2 left
		{5, 10, 0},
		{5, 5, 0}, // already above a lower max
		{4, -1, 4},
	}
	for _, st := range steps {
		if got := mustBudget(t, s, st.n, st.max); got != st.want {
			t.Errorf("TakeBudget(%d, %d) = %d, want %d", st.n, st.max, got, st.want)
		}
	}
	for _, parts := range [][]int{nil, {0}, {1, 2, 3}} {
		if got := mustStats(t, s, parts).Issued; got != 14 {
			t.Errorf("Stats(%v).Issued = %d, want 14", parts, got)
		}
	}
}

func testBudgetConcurrent(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	const max, workers = 300, 24
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				got, err := s.TakeBudget(ctx, 1+w%5, max)
				if err != nil {
					t.Error(err)
					return
				}
				if got == 0 {
					return
				}
				mu.Lock()
				total += got
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if total != max {
		t.Errorf("granted %d in total, want %d", total, max)
	}
	if got := mustStats(t, s, nil).Issued; got != max {
		t.Errorf("Issued = %d, want %d", got, max)
	}
}

func testStats(t *testing.T, open opener) {
	s := open()
	wantStats(t, s, []int{1, 2}, Stats{})
	mustApply(t, s, 1, 1, []Queued{q("a", "http://a/1"), q("a", "http://a/2")}, nil)
	mustApply(t, s, 2, 1, []Queued{q("b", "http://b/1"), q("c", "http://c/1"), q("c", "http://c/2")}, nil)
	mustPop(t, s, 2, issue("b", "tb"), issue("c", "tc"))
	mustBudget(t, s, 2, 0)
	wantStats(t, s, []int{1}, Stats{Queued: 2, Enqueued: 2, Issued: 2})
	wantStats(t, s, []int{2}, Stats{Queued: 1, InFlight: 2, Enqueued: 3, Issued: 2})
	wantStats(t, s, []int{1, 2, 3}, Stats{Queued: 3, InFlight: 2, Enqueued: 5, Issued: 2})
	mustApply(t, s, 2, 2, nil, []Done{{Host: "b", TaskID: "tb"}})
	wantStats(t, s, []int{1, 2}, Stats{Queued: 3, InFlight: 1, Enqueued: 5, Issued: 2})
}

func testBadArgs(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	if _, err := s.Seen(ctx, -1, []uint64{1}); err == nil {
		t.Error("negative partition accepted")
	}
	if _, err := s.Count(ctx, -1); err == nil {
		t.Error("Count: negative partition accepted")
	}
	if err := s.Scan(ctx, -1, func([]uint64) error { return nil }); err == nil {
		t.Error("Scan: negative partition accepted")
	}
	if _, err := s.Apply(ctx, 0, 1, []Queued{q("", "http://x/")}, nil); err == nil {
		t.Error("empty host accepted")
	}
	if _, err := s.Apply(ctx, 0, 1, []Queued{q("a\x00b", "http://x/")}, nil); err == nil {
		t.Error("host with NUL accepted")
	}
	if st := mustLoad(t, s, 0); st.Applied != 0 {
		t.Errorf("a rejected batch moved the watermark: %s", dump(st))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Pop(cctx, 0, []Issue{issue("a", "t")}); !errors.Is(err, context.Canceled) {
		t.Errorf("Pop with canceled context: %v", err)
	}
	// A URL enqueued without an attempt count is a first attempt.
	mustApply(t, s, 0, 1, []Queued{{Host: "a", Link: messages.Link{URL: "http://a/"}}}, nil)
	if in := mustPop(t, s, 0, issue("a", "t")); len(in) != 1 || in[0].Task.Attempt != 1 {
		t.Errorf("Attempt 0 enqueued: %s", dump(in))
	}
}

// ---- backend-specific tests ----

func TestBoltLocked(t *testing.T) {
	path := t.TempDir() + "/trawler.db"
	s, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	_, err = OpenBolt(path)
	if err == nil || !strings.Contains(err.Error(), "in use by another trawler process") {
		t.Fatalf("second open: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second open took %v", d)
	}
}

func TestBoltCorrupt(t *testing.T) {
	s := boltBackend(t)().(*Bolt)
	ctx := context.Background()
	mustApply(t, s, 0, 1, []Queued{q("a.example", "http://a.example/")}, nil)
	err := s.db.Update(func(tx *bolt.Tx) error {
		part := readPart(tx, 0)
		if err := part.Bucket(bucketQueue).Put(queueKey("a.example", 0, 0), []byte("{not json")); err != nil {
			return err
		}
		return part.Bucket(bucketInFlight).Put([]byte("b.example"), []byte("[]"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctx, 0, []Issue{issue("a.example", "t")}); err == nil || !strings.Contains(err.Error(), "a.example") {
		t.Errorf("Pop of corrupt entry: %v", err)
	}
	if _, err := s.Load(ctx, 0); err == nil || !strings.Contains(err.Error(), "b.example") {
		t.Errorf("Load of corrupt in-flight entry: %v", err)
	}
	if _, err := s.Expire(ctx, 0, "b.example", "t", 3); err == nil {
		t.Error("Expire of corrupt in-flight entry succeeded")
	}
}

func TestRedisCorrupt(t *testing.T) {
	addr := redisAddr(t)
	s := redisBackend([]string{addr})(t)().(*Redis)
	ctx := context.Background()
	mustApply(t, s, 0, 1, []Queued{q("a.example", "http://a.example/")}, nil)
	qk := s.queueKey(0, "a.example")
	if err := s.c.ZAdd(ctx, qk, redis.Z{Member: strings.Repeat("0", queueMemberPrefix) + "{not json"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HSet(ctx, s.inflightKey(0), "b.example", "[]").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctx, 0, []Issue{issue("a.example", "t")}); err == nil || !strings.Contains(err.Error(), qk) {
		t.Errorf("Pop of corrupt entry: %v (want the key %s named)", err, qk)
	}
	for name, fn := range map[string]func() error{
		"Load":   func() error { _, err := s.Load(ctx, 0); return err },
		"Expire": func() error { _, err := s.Expire(ctx, 0, "b.example", "t", 3); return err },
		"Apply":  func() error { _, err := s.Apply(ctx, 0, 2, nil, []Done{{Host: "b.example", TaskID: "t"}}); return err },
		"Step": func() error {
			_, err := s.Step(ctx, 0, StepRequest{Seq: 2, Enqueue: []Queued{q("c.example", "http://c.example/")},
				Done: []Done{{Host: "b.example", TaskID: "t"}}, Applied: []uint64{9}})
			return err
		},
	} {
		if err := fn(); err == nil || !strings.Contains(err.Error(), s.inflightKey(0)) {
			t.Errorf("%s of corrupt in-flight entry: %v", name, err)
		}
	}
}

// TestRedisStepCorruptChangesNothing: a step that meets a corrupt in-flight
// entry fails before writing anything, and a done whose in-flight entry is
// JSON that Go did not write in its usual form still frees its host (the
// script decodes it), once however many times the batch names it.
// On miniredis too: its Lua (and cjson) is not Redis's.
func TestRedisStepCorruptChangesNothing(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testRedisStepCorrupt(t, redisAddr(t)) })
	t.Run("miniredis", func(t *testing.T) { testRedisStepCorrupt(t, miniredis.RunT(t).Addr()) })
}

func testRedisStepCorrupt(t *testing.T, addr string) {
	s := redisBackend([]string{addr})(t)().(*Redis)
	ctx := context.Background()
	mustApply(t, s, 0, 1, []Queued{q("a.example", "http://a.example/1"), q("a.example", "http://a.example/2")}, nil)
	if err := s.c.HSet(ctx, s.inflightKey(0), "b.example", "[]").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, 0, StepRequest{Seq: 2, Enqueue: []Queued{q("a.example", "http://a.example/3")},
		Done: []Done{{Host: "b.example", TaskID: "t"}}, Applied: []uint64{5}}); err == nil {
		t.Fatal("step over a corrupt in-flight entry succeeded")
	}
	if marked, err := s.Applied(ctx, 0, []uint64{5}); err != nil || marked[0] {
		t.Fatalf("failed step marked its sequence: %v, %v", marked, err)
	}
	wantStats(t, s, []int{0}, Stats{Queued: 2, Enqueued: 2})
	if err := s.c.HDel(ctx, s.inflightKey(0), "b.example").Err(); err != nil {
		t.Fatal(err)
	}

	tasks := mustPop(t, s, 0, issue("a.example", "t1"))
	if len(tasks) != 1 {
		t.Fatalf("pop: %v", tasks)
	}
	// The same entry, re-encoded with its fields in another order.
	var in map[string]any
	raw := s.c.HGet(ctx, s.inflightKey(0), "a.example").Val()
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatal(err)
	}
	other, _ := json.Marshal(map[string]any{"lease_until": in["lease_until"], "task": in["task"]})
	if strings.HasPrefix(string(other), inFlightPrefix("t1")) {
		t.Fatal("re-encoded entry still has Go's prefix")
	}
	if err := s.c.HSet(ctx, s.inflightKey(0), "a.example", other).Err(); err != nil {
		t.Fatal(err)
	}
	done := Done{Host: "a.example", TaskID: "t1"}
	res, err := s.Step(ctx, 0, StepRequest{Seq: 3, Done: []Done{done, done}, Applied: []uint64{6}, Issue: []Issue{issue("a.example", "t2")}})
	if err != nil || !res.Applied || len(res.Tasks) != 1 || res.Tasks[0].Task.URL != "http://a.example/2" {
		t.Fatalf("step: %+v, %v", res, err)
	}
	wantStats(t, s, []int{0}, Stats{Queued: 0, InFlight: 1, Enqueued: 2})
	if s.c.HExists(ctx, s.restKey(0), "a.example").Val() {
		t.Error("a host freed and popped in one step kept a politeness time")
	}
	// Freed with its queue empty: its politeness time is kept, and it
	// leaves the hosts set.
	nb := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	res, err = s.Step(ctx, 0, StepRequest{Seq: 4, Done: []Done{{Host: "a.example", TaskID: "t2", NotBefore: nb}}, Issue: []Issue{issue("a.example", "t3")}})
	if err != nil || !res.Applied || len(res.Tasks) != 0 {
		t.Fatalf("step: %+v, %v", res, err)
	}
	if st := mustLoad(t, s, 0); len(st.Hosts) != 1 || !st.Hosts[0].NotBefore.Equal(nb) || st.Hosts[0].InFlight != nil {
		t.Errorf("after freeing a host with nothing queued: %s", dump(st))
	}
	if s.c.SIsMember(ctx, s.hostsKey(0), "a.example").Val() {
		t.Error("a host with nothing queued or in flight is still in the hosts set")
	}
}

// TestRedisKeyLayout pins the documented key names (docs/store.md).
func TestRedisKeyLayout(t *testing.T) {
	addr := redisAddr(t)
	s := redisBackend([]string{addr})(t)().(*Redis)
	ctx := context.Background()
	fillPartition(t, s, 7)
	mustBudget(t, s, 1, 0)
	pre := s.prefix
	if err := s.Record(ctx, 7, []uint64{0xabcd_0000_0000_0002, 0xabcd_0000_0000_0001}); err != nil {
		t.Fatal(err)
	}
	for key, typ := range map[string]string{
		pre + ":{" + pre + ":p7}:seen":        "hash",
		pre + ":{" + pre + ":p7}:seen:0:0":    "string",
		pre + ":{" + pre + ":p7}:hosts":       "set",
		pre + ":{" + pre + ":p7}:q:a.example": "zset",
		pre + ":{" + pre + ":p7}:inflight":    "hash",
		pre + ":{" + pre + ":p7}:meta":        "hash",
		pre + ":{" + pre + ":global}:budget":  "string",
	} {
		if got := s.c.Type(ctx, key).Val(); got != typ {
			t.Errorf("TYPE %s = %q, want %q", key, got, typ)
		}
	}
	seen := pre + ":{" + pre + ":p7}:seen"
	wantHash := map[string]string{"format": "2", "depth": "0", "split": "0", "count": "3"}
	if got := s.c.HGetAll(ctx, seen).Val(); dump(got) != dump(wantHash) {
		t.Errorf("HGETALL %s = %v, want %v", seen, got, wantHash)
	}
	want := "\x00\x00\x00\x00\x00\x00\x00\x07\xab\xcd\x00\x00\x00\x00\x00\x01\xab\xcd\x00\x00\x00\x00\x00\x02"
	if got := s.c.Get(ctx, seen+":0:0").Val(); got != want {
		t.Errorf("GET %s:0:0 = %q, want %q (sorted 8-byte big-endian fingerprints)", seen, got, want)
	}

	// Past seenBucketFill fingerprints, bucket (0,0) splits by the top bit
	// (0xabcd... goes up, 7 stays).
	fps := make([]uint64, seenBucketFill)
	for i := range fps {
		fps[i] = uint64(i) * (math.MaxUint64/seenBucketFill + 1) // half with the top bit set
	}
	if err := s.Record(ctx, 7, fps); err != nil {
		t.Fatal(err)
	}
	wantHash = map[string]string{"format": "2", "depth": "1", "split": "0", "count": strconv.Itoa(3 + seenBucketFill)}
	if got := s.c.HGetAll(ctx, seen).Val(); dump(got) != dump(wantHash) {
		t.Errorf("after a split: HGETALL %s = %v, want %v", seen, got, wantHash)
	}
	for key, n := range map[string]int64{seen + ":0:0": 0, seen + ":1:0": 8 * (1 + seenBucketFill/2), seen + ":1:1": 8 * (2 + seenBucketFill/2)} {
		if got := s.c.StrLen(ctx, key).Val(); got != n {
			t.Errorf("STRLEN %s = %d, want %d", key, got, n)
		}
	}
}

func TestRedisBadPrefix(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	s := NewRedis(c, "crawl{1}")
	defer s.Close()
	if _, err := s.Seen(context.Background(), 0, []uint64{1}); err == nil || !strings.Contains(err.Error(), "braces") {
		t.Errorf("Seen with a braced prefix: %v", err)
	}
	if _, err := OpenRedis(context.Background(), []string{"127.0.0.1:1"}, false, "a}"); err == nil {
		t.Error("OpenRedis accepted a braced prefix")
	}
}

func TestOpenRedisUnreachable(t *testing.T) {
	addr := "127.0.0.1:" + fmt.Sprint(testredis.FreePort(t)) // nothing listens there now
	for _, addrs := range [][]string{{addr}, {redisAddr(t), addr}} {
		_, err := OpenRedis(context.Background(), addrs, false, "x")
		if err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("OpenRedis(%v) = %v, want an error naming %s", addrs, err, addr)
		}
	}
}

// ---- benchmarks: 1000-fingerprint batches, as dedup sends them ----

const benchBatch = 1000

func benchBackends(b *testing.B) map[string]backend {
	return map[string]backend{
		"bolt":  boltBackend,
		"redis": redisBackend([]string{redisAddr(b)}),
	}
}

func randomBatch(rng *rand.Rand) []uint64 {
	fps := make([]uint64, benchBatch)
	for i := range fps {
		fps[i] = rng.Uint64()
	}
	return fps
}

func BenchmarkSeen(b *testing.B) {
	for _, name := range []string{"bolt", "redis"} {
		b.Run(name, func(b *testing.B) {
			s, ctx := benchBackends(b)[name](b)(), context.Background()
			rng := rand.New(rand.NewPCG(1, 1))
			// 100k known fingerprints; each query batch is half known, half new.
			batches := make([][]uint64, 100)
			for i := range batches {
				batches[i] = randomBatch(rng)
				if err := s.Record(ctx, 0, batches[i]); err != nil {
					b.Fatal(err)
				}
				copy(batches[i][benchBatch/2:], randomBatch(rng))
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Seen(ctx, 0, batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			reportPerFP(b)
		})
	}
}

func BenchmarkRecord(b *testing.B) {
	for _, name := range []string{"bolt", "redis"} {
		b.Run(name, func(b *testing.B) {
			s, ctx := benchBackends(b)[name](b)(), context.Background()
			rng := rand.New(rand.NewPCG(2, 2))
			for b.Loop() {
				if err := s.Record(ctx, 0, randomBatch(rng)); err != nil {
					b.Fatal(err)
				}
			}
			reportPerFP(b)
		})
	}
}

// reportPerFP reports ns per fingerprint and fingerprints per second.
func reportPerFP(b *testing.B) {
	n := float64(b.N * benchBatch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/fp")
	b.ReportMetric(n/b.Elapsed().Seconds(), "fps/s")
}

// ---- helpers ----

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func q(host, url string) Queued {
	return Queued{Host: host, Link: messages.Link{URL: url, Depth: 1}, Attempt: 1}
}

func issue(host, id string) Issue {
	return Issue{Host: host, TaskID: id, IssuedAt: t0, Deadline: t0.Add(time.Minute), LeaseUntil: t0.Add(2 * time.Minute)}
}

func mustSeen(t testing.TB, s Store, p int, fps []uint64) []bool {
	t.Helper()
	got, err := s.Seen(context.Background(), p, fps)
	if err != nil {
		t.Fatalf("Seen: %v", err)
	}
	if len(got) != len(fps) {
		t.Fatalf("Seen: %d answers for %d fingerprints", len(got), len(fps))
	}
	return got
}

func mustCount(t testing.TB, s Store, p int) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), p)
	if err != nil {
		t.Fatalf("Count(%d): %v", p, err)
	}
	return n
}

// scanChunks returns what Scan hands fn, chunk by chunk.
func scanChunks(t testing.TB, s Store, p int) [][]uint64 {
	t.Helper()
	var chunks [][]uint64
	err := s.Scan(context.Background(), p, func(fps []uint64) error {
		chunks = append(chunks, fps)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%d): %v", p, err)
	}
	return chunks
}

func mustApply(t testing.TB, s Store, p int, seq uint64, enq []Queued, done []Done) bool {
	t.Helper()
	ok, err := s.Apply(context.Background(), p, seq, enq, done)
	if err != nil {
		t.Fatalf("Apply(p%d, seq %d): %v", p, seq, err)
	}
	return ok
}

func mustPop(t testing.TB, s Store, p int, reqs ...Issue) []InFlight {
	t.Helper()
	got, err := s.Pop(context.Background(), p, reqs)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return got
}

func mustLoad(t testing.TB, s Store, p int) PartitionState {
	t.Helper()
	st, err := s.Load(context.Background(), p)
	if err != nil {
		t.Fatalf("Load(%d): %v", p, err)
	}
	return st
}

func mustBudget(t testing.TB, s Store, n, max int) int {
	t.Helper()
	got, err := s.TakeBudget(context.Background(), n, max)
	if err != nil {
		t.Fatalf("TakeBudget: %v", err)
	}
	return got
}

func mustStats(t testing.TB, s Store, parts []int) Stats {
	t.Helper()
	st, err := s.Stats(context.Background(), parts)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// wantStats checks Queued, InFlight and Enqueued, and Issued when non-zero.
func wantStats(t testing.TB, s Store, parts []int, want Stats) {
	t.Helper()
	got := mustStats(t, s, parts)
	if want.Issued == 0 {
		got.Issued = 0
	}
	if got != want {
		t.Errorf("Stats(%v) = %+v, want %+v", parts, got, want)
	}
}

// dump renders a value as JSON, for comparisons and messages.
func dump(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(data)
}

// The intake log answers exactly what was marked, per partition, survives a
// reopen, and forgets what the floor passed.
func testIntakeLog(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	got, err := s.Applied(ctx, 3, []uint64{1, 5, 9})
	if err != nil || fmt.Sprint(got) != "[false false false]" {
		t.Fatalf("empty log: %v, %v", got, err)
	}
	if err := s.MarkApplied(ctx, 3, []uint64{5, 9, 12}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkApplied(ctx, 4, []uint64{1}, 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open()
	defer s.Close()
	got, err = s.Applied(ctx, 3, []uint64{1, 5, 9, 10, 12})
	if err != nil || fmt.Sprint(got) != "[false true true false true]" {
		t.Fatalf("after reopen: %v, %v", got, err)
	}
	// Out of order is fine: 7 applied after 12.
	if err := s.MarkApplied(ctx, 3, []uint64{7}, 9); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Applied(ctx, 3, []uint64{5, 7, 9, 12})
	if fmt.Sprint(got) != "[false false false true]" {
		t.Errorf("after floor 9: %v, want only 12 remembered", got)
	}
	if got, _ := s.Applied(ctx, 4, []uint64{1, 12}); fmt.Sprint(got) != "[true false]" {
		t.Errorf("partition 4: %v", got)
	}
}

// popAll pops host's queue to the end, freeing the host after each task.
func popAll(t *testing.T, s Store, p int, host string, seq *uint64) []string {
	t.Helper()
	var urls []string
	for i := range 1000 {
		id := fmt.Sprintf("%s-%d-%d", host, *seq, i)
		in := mustPop(t, s, p, issue(host, id))
		if len(in) == 0 {
			return urls
		}
		urls = append(urls, in[0].Task.URL)
		mustApply(t, s, p, *seq, nil, []Done{{Host: host, TaskID: id}})
		*seq++
	}
	t.Fatal("queue never ran dry")
	return nil
}

// A host's queue is breadth-first by depth without scores, best-first with
// them, arrival order among equals; a retried URL goes first among its rank.
func testOrder(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	const p = 2
	link := func(url string, depth int, score float64) Queued {
		return Queued{Host: "a", Link: messages.Link{URL: url, Depth: depth, Score: score}}
	}
	mustApply(t, s, p, 1, []Queued{link("d3", 3, 0), link("d1a", 1, 0), link("d2", 2, 0), link("d1b", 1, 0), link("d0", 0, 0)}, nil)
	seq := uint64(2)
	if got, want := popAll(t, s, p, "a", &seq), []string{"d0", "d1a", "d1b", "d2", "d3"}; !slices.Equal(got, want) {
		t.Errorf("breadth-first order %v, want %v", got, want)
	}
	mustApply(t, s, p, seq, []Queued{link("s0.1", 1, 0.1), link("s2", 5, 2), link("s0.5", 1, 0.5), link("s2b", 4, 2), link("neg", 0, -1), link("s0.5b", 1, 0.5)}, nil)
	seq++
	if got, want := popAll(t, s, p, "a", &seq), []string{"s2b", "s2", "s0.5", "s0.5b", "s0.1", "neg"}; !slices.Equal(got, want) {
		t.Errorf("best-first order %v, want %v", got, want)
	}
	// An expired task comes back ahead of URLs of its rank, behind better ones.
	mustApply(t, s, p, seq, []Queued{link("x1", 1, 1), link("y1", 1, 1), link("z3", 1, 3)}, nil)
	seq++
	in := mustPop(t, s, p, issue("a", "tz"))
	if len(in) != 1 || in[0].Task.URL != "z3" || in[0].Task.Score != 3 {
		t.Fatalf("popped %s", dump(in))
	}
	mustApply(t, s, p, seq, []Queued{link("w5", 1, 5)}, nil)
	seq++
	in = mustPop(t, s, p, issue("a", "tw"))
	if _, err := s.Expire(ctx, p, "a", "tw", 3); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, p, seq, nil, []Done{{Host: "a", TaskID: "tz"}})
	seq++
	if got, want := popAll(t, s, p, "a", &seq), []string{"w5", "x1", "y1"}; !slices.Equal(got, want) {
		t.Errorf("after expire %v, want %v", got, want)
	}
	_ = in
}

// A host that has had HostBudget URLs issued takes no more: its queue is
// dropped at the next pop and new URLs for it are not queued.
func testHostBudget(t *testing.T, open opener) {
	s := open()
	s.SetLimits(Limits{HostBudget: 3})
	defer s.SetLimits(Limits{})
	const p = 3
	var batch []Queued
	for i := range 5 {
		batch = append(batch, q("trap", fmt.Sprintf("http://trap/%d", i)), q("ok", fmt.Sprintf("http://ok/%d", i)))
	}
	mustApply(t, s, p, 1, batch[:8], nil)
	seq := uint64(2)
	if got := popAll(t, s, p, "trap", &seq); len(got) != 3 {
		t.Errorf("trap host issued %v, want 3 URLs", got)
	}
	mustApply(t, s, p, seq, batch[8:], nil) // trap/4 is refused at intake
	seq++
	wantStats(t, s, []int{p}, Stats{Queued: 5, Enqueued: 9, Dropped: 2})
	if got := popAll(t, s, p, "ok", &seq); len(got) != 3 {
		t.Errorf("ok host issued %v, want 3 URLs", got)
	}
	wantStats(t, s, []int{p}, Stats{Queued: 0, Enqueued: 9, Dropped: 4})
	if got := mustStats(t, s, []int{p}).DroppedBudget(); got != 4 {
		t.Errorf("dropped over the budget %d, want 4", got)
	}
	if st := mustLoad(t, s, p); len(st.Hosts) != 0 {
		t.Errorf("hosts left after their budgets: %s", dump(st))
	}
}

// A full host queue keeps its best URLs: the lowest-priority one goes.
func testHostQueueCap(t *testing.T, open opener) {
	s := open()
	s.SetLimits(Limits{HostQueue: 3})
	defer s.SetLimits(Limits{})
	const p = 4
	link := func(url string, depth int) Queued {
		return Queued{Host: "a", Link: messages.Link{URL: url, Depth: depth}}
	}
	mustApply(t, s, p, 1, []Queued{link("d2", 2), link("d1", 1), link("d3", 3), link("d0", 0), link("d4", 4)}, nil)
	wantStats(t, s, []int{p}, Stats{Queued: 3, Enqueued: 3, Dropped: 2, DroppedQueue: 2})
	if got := mustStats(t, s, []int{p}).DroppedBudget(); got != 0 {
		t.Errorf("dropped over the budget %d, want 0", got)
	}
	seq := uint64(2)
	if got, want := popAll(t, s, p, "a", &seq), []string{"d0", "d1", "d2"}; !slices.Equal(got, want) {
		t.Errorf("capped queue %v, want %v", got, want)
	}
}

// A host's politeness time outlives a restart of its frontier, even when the
// host has nothing queued; times in the past are forgotten.
func testNotBefore(t *testing.T, open opener) {
	s := open()
	const p = 5
	mustApply(t, s, p, 1, []Queued{q("a", "http://a/1"), q("b", "http://b/1"), q("c", "http://c/1"), q("c", "http://c/2")}, nil)
	for _, h := range []string{"a", "b", "c"} {
		mustPop(t, s, p, issue(h, "t-"+h))
	}
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	mustApply(t, s, p, 2, nil, []Done{
		{Host: "a", TaskID: "t-a", NotBefore: later},
		{Host: "b", TaskID: "t-b", NotBefore: time.Now().Add(-time.Minute)},
		{Host: "c", TaskID: "t-c", NotBefore: later},
	})
	st := mustLoad(t, s, p)
	got := map[string]HostState{}
	for _, h := range st.Hosts {
		got[h.Host] = h
	}
	if len(got) != 2 || !got["a"].NotBefore.Equal(later) || got["a"].Queued != 0 || !got["c"].NotBefore.Equal(later) || got["c"].Queued != 1 {
		t.Errorf("Load = %s; want a (nothing queued) and c (1 queued) resting until %v, b forgotten", dump(st), later)
	}
	// Issuing the host clears its time.
	mustPop(t, s, p, issue("c", "t-c2"))
	st = mustLoad(t, s, p)
	for _, h := range st.Hosts {
		if h.Host == "c" && !h.NotBefore.IsZero() {
			t.Errorf("c still resting after it was issued: %s", dump(h))
		}
	}
}

// The Redis store frees a host without decoding its in-flight entry when the
// entry starts as inFlightPrefix says; this pins that shape.
func TestInFlightPrefix(t *testing.T) {
	in := newInFlight(3, q("a", "http://a/1"), issue("a", "task-\"1"))
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), inFlightPrefix(`task-"1`)) {
		t.Errorf("in-flight JSON %s does not start with %s", data, inFlightPrefix(`task-"1`))
	}
	if strings.HasPrefix(string(data), inFlightPrefix("task-")) {
		t.Error("a prefix of the task ID matched")
	}
}
