package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testredis"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// The conformance suite (pkg/store/storetest) runs against every backend in
// conformance_test.go; what follows are the backends' own tests.

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
