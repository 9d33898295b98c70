package store

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// testSeenFormat checks that a Redis partition whose seen set has another
// layout (another version, or the old Redis set) is refused.
func testSeenFormat(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	rs, ok := s.(*Redis)
	if !ok {
		t.Skip("the format version guards the Redis layout")
	}
	const p = 2
	if err := s.Record(ctx, p, []uint64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	meta := rs.seenMetaKey(p)
	ops := map[string]func() error{
		"Seen":   func() error { _, err := s.Seen(ctx, p, []uint64{1, 4}); return err },
		"Record": func() error { return s.Record(ctx, p, []uint64{4}) },
		"Count":  func() error { _, err := s.Count(ctx, p); return err },
		"Scan":   func() error { return s.Scan(ctx, p, func([]uint64) error { return nil }) },
	}
	refused := func(found string) {
		t.Helper()
		for name, op := range ops {
			err := op()
			if !errors.Is(err, ErrSeenFormat) || !strings.Contains(err.Error(), found) ||
				!strings.Contains(err.Error(), "new crawl") || !strings.Contains(err.Error(), "partition 2") {
				t.Errorf("%s on %s: %v, want ErrSeenFormat naming it and what to do", name, found, err)
			}
		}
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rs.c.HSet(ctx, meta, "format", "3").Err())
	refused("has format 3")
	must(rs.c.Del(ctx, meta).Err())
	must(rs.c.SAdd(ctx, meta, "\x00\x00\x00\x00\x00\x00\x00\x01").Err()) // format 1: one Redis set
	refused("is a Redis set")

	// The refused Record wrote nothing; other partitions work.
	must(rs.c.Del(ctx, meta).Err())
	must(rs.c.HSet(ctx, meta, "format", seenFormat, "depth", 0, "split", 0, "count", 3).Err())
	if got := mustSeen(t, s, p, []uint64{1, 4}); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("after restoring the format: Seen = %v", got)
	}
	if got := mustSeen(t, s, p+1, []uint64{1}); got[0] {
		t.Error("another partition sees 1")
	}
}

// TestSeenGeom checks bucket addressing and the order of splits.
func TestSeenGeom(t *testing.T) {
	g := seenGeom{}
	for _, fp := range []uint64{0, 1 << 63, math.MaxUint64} {
		if d, i := g.bucket(fp); d != 0 || i != 0 {
			t.Errorf("depth 0: bucket(%#x) = %d, %d", fp, d, i)
		}
	}
	var seq [][2]int
	for range 7 {
		seq = append(seq, [2]int{g.depth, g.split})
		g = g.next()
	}
	want := [][2]int{{0, 0}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {2, 2}, {2, 3}}
	if !slices.Equal(seq, want) {
		t.Errorf("splits %v, want %v", seq, want)
	}
	if g != (seenGeom{3, 0}) || g.buckets() != 8 {
		t.Errorf("after 7 splits: %+v, %d buckets", g, g.buckets())
	}
	g = seenGeom{2, 1} // bucket 0 split into (3,0), (3,1)
	for fp, want := range map[uint64][2]uint64{
		0:                     {3, 0},
		1<<61 - 1:             {3, 0},
		1 << 61:               {3, 1},
		1<<62 - 1:             {3, 1},
		1 << 62:               {2, 1},
		math.MaxUint64:        {2, 3},
		0xbfff_ffff_ffff_ffff: {2, 2},
	} {
		if d, i := g.bucket(fp); d != int(want[0]) || i != want[1] {
			t.Errorf("%+v: bucket(%#x) = (%d, %d), want %v", g, fp, d, i, want)
		}
	}
}

// TestSeenCalls checks the grouping of a batch into script calls.
func TestSeenCalls(t *testing.T) {
	r := NewRedis(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), "x")
	defer r.Close()
	g := seenGeom{1, 0} // buckets (1,0) and (1,1)
	var fps []uint64
	for i := range seenChunk + 10 { // bucket (1,0) straddles two calls
		fps = append(fps, uint64(i))
	}
	fps = append(fps, math.MaxUint64)
	calls := r.seenCalls(3, g, fps, false)
	if len(calls) != 2 || calls[0].lo != 0 || calls[0].hi != seenChunk || calls[1].lo != seenChunk || calls[1].hi != len(fps) {
		t.Fatalf("got %d calls: %+v", len(calls), calls)
	}
	want := [][]string{
		{"x:{x:p3}:seen", "x:{x:p3}:seen:1:0"},
		{"x:{x:p3}:seen", "x:{x:p3}:seen:1:0", "x:{x:p3}:seen:1:1"},
	}
	for i, c := range calls {
		if !slices.Equal(c.keys, want[i]) {
			t.Errorf("call %d keys %v, want %v", i, c.keys, want[i])
		}
		if c.args[0] != seenFormat || c.args[1] != 1 || c.args[2] != 0 || c.args[3] != len(c.keys)-1 || len(c.args) != 4+len(c.keys)-1 {
			t.Errorf("call %d args %v", i, c.args[:4])
		}
	}
	if got := len(calls[1].args[4].([]byte)); got != 8*10 {
		t.Errorf("bucket (1,0) in call 2 has %d bytes, want 80", got)
	}

	// A write declares split slots in its last call only: (1,0), (1,1),
	// (2,0), ...
	calls = r.seenCalls(3, g, fps, true)
	if len(calls) != 2 || len(calls[0].keys) != 2 || len(calls[0].args) != 6 {
		t.Fatalf("write: %d calls, first with keys %v", len(calls), calls[0].keys)
	}
	slots := len(fps)/seenBucketFill + seenSplitSlack
	keys, args := calls[1].keys, calls[1].args
	if len(keys) != 3+3*slots || len(args) != 5+2+slots {
		t.Fatalf("write: last call has %d keys, %d args; want %d split slots", len(keys), len(args), slots)
	}
	wantKeys := []string{"x:{x:p3}:seen:1:0", "x:{x:p3}:seen:2:0", "x:{x:p3}:seen:2:1",
		"x:{x:p3}:seen:1:1", "x:{x:p3}:seen:2:2", "x:{x:p3}:seen:2:3",
		"x:{x:p3}:seen:2:0", "x:{x:p3}:seen:3:0", "x:{x:p3}:seen:3:1"}
	if !slices.Equal(keys[3:12], wantKeys) {
		t.Errorf("split slots %v, want %v", keys[3:12], wantKeys)
	}
	if args[4] != seenBucketFill || string(args[7].([]byte)) != string(be64(1<<62)) ||
		string(args[8].([]byte)) != string(be64(3<<62)) || string(args[9].([]byte)) != string(be64(1<<61)) {
		t.Errorf("write call args %q", args[:10])
	}
}

// TestRedisSeenBuckets checks the bucket invariants after dedup-sized
// batches: every bucket sorted, holding only fingerprints of its address,
// the buckets those of the stored geometry, and the count per bucket near
// seenBucketFill.
func TestRedisSeenBuckets(t *testing.T) {
	addr := redisAddr(t)
	open := redisBackend([]string{addr})(t)
	s, other := open().(*Redis), open().(*Redis)
	ctx := context.Background()
	const p = 6
	mustSeen(t, other, p, []uint64{1}) // other caches geometry (0, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	want := map[uint64]bool{}
	for len(want) < 60_000 {
		batch := make([]uint64, 256)
		for i := range batch {
			batch[i] = rng.Uint64()
			want[batch[i]] = true
		}
		if err := s.Record(ctx, p, batch); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.seenState(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if st.count != int64(len(want)) {
		t.Errorf("count %d, want %d", st.count, len(want))
	}
	if perBucket := float64(st.count) / float64(st.geom.buckets()); perBucket > seenBucketFill || perBucket < seenBucketFill*0.9 {
		t.Errorf("geometry %+v: %.0f fingerprints per bucket, want about %d", st.geom, perBucket, seenBucketFill)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	keys, err := scanKeys(ctx, c, s.prefix)
	if err != nil {
		t.Fatal(err)
	}
	base := s.base(p)
	total, largest := 0, 0
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, s.seenMetaKey(p)+":")
		if !ok {
			continue
		}
		ds, is, _ := strings.Cut(rest, ":")
		d, _ := strconv.Atoi(ds)
		i, _ := strconv.ParseUint(is, 10, 64)
		if seenBucketKey(base, d, i) != k {
			t.Fatalf("odd bucket key %s", k)
		}
		v := c.Get(ctx, k).Val()
		fps := make([]uint64, len(v)/8)
		for j := range fps {
			fps[j] = binary.BigEndian.Uint64([]byte(v[8*j:]))
			if gd, gi := st.geom.bucket(fps[j]); gd != d || gi != i {
				t.Fatalf("%s holds %#x, whose bucket is (%d, %d)", k, fps[j], gd, gi)
			}
			if !want[fps[j]] {
				t.Fatalf("%s holds %#x, never recorded", k, fps[j])
			}
		}
		if len(v)%8 != 0 || len(fps) == 0 || !slices.IsSorted(fps) || len(slices.Compact(slices.Clone(fps))) != len(fps) {
			t.Fatalf("%s: %d bytes, sorted %v", k, len(v), slices.IsSorted(fps))
		}
		total += len(fps)
		largest = max(largest, len(fps))
	}
	if total != len(want) {
		t.Errorf("buckets hold %d fingerprints, want %d", total, len(want))
	}
	if largest > 3*seenBucketFill {
		t.Errorf("largest bucket holds %d fingerprints (fill %d)", largest, seenBucketFill)
	}
	t.Logf("%d fingerprints, geometry %+v (%d buckets), largest bucket %d", total, st.geom, st.geom.buckets(), largest)

	// A client whose geometry is stale (another owner split since) is told
	// so by the scripts and redoes its calls with the current geometry.
	all := slices.Sorted(maps.Keys(want))
	for i, ok := range mustSeen(t, other, p, append(all[:1000:1000], 1, 2)) {
		if ok != (i < 1000) {
			t.Fatalf("stale client: Seen[%d] = %v", i, ok)
		}
	}
	if err := other.Record(ctx, p, []uint64{1, 2, all[0]}); err != nil {
		t.Fatal(err)
	}
	if got := mustCount(t, s, p); got != int64(len(want)+2) {
		t.Errorf("Count after the stale client's Record = %d, want %d", got, len(want)+2)
	}
}

// TestRedisSeenSetBytesPerURL measures the seen set's memory from Redis's
// INFO (used_memory before and after) for distinct fingerprints spread over
// the partitions of a fresh prefix (32, the default partition count, or
// $TRAWLER_BENCH_PARTITIONS): 10,000,000 with TRAWLER_BENCH_FULL=1, where it
// must stay <= 12 bytes per URL, else 200,000 and the figure is only logged.
func TestRedisSeenSetBytesPerURL(t *testing.T) {
	n, full := 200_000, os.Getenv("TRAWLER_BENCH_FULL") == "1"
	if full {
		n = 10_000_000
	}
	perURL := seenSetBytesPerURL(t, n, full)
	if full && perURL > 12 {
		t.Errorf("%.2f bytes/URL, want <= 12", perURL)
	}
}

// BenchmarkSeenSetBytesPerURL reports the same figure for 1,000,000
// fingerprints (10,000,000 with TRAWLER_BENCH_FULL=1), once whatever b.N:
// it is a memory measurement, not a timing.
func BenchmarkSeenSetBytesPerURL(b *testing.B) {
	n := 1_000_000
	if os.Getenv("TRAWLER_BENCH_FULL") == "1" {
		n = 10_000_000
	}
	perURL := seenSetBytesPerURL(b, n, false)
	b.ReportMetric(perURL, "bytes/URL")
	b.ReportMetric(0, "ns/op")
}

// seenSetBytesPerURL records n distinct fingerprints under a fresh prefix
// and returns Redis's used_memory growth per fingerprint.
func seenSetBytesPerURL(t testing.TB, n int, progress bool) float64 {
	addr := redisAddr(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	usedMemory := func() int64 {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatalf("INFO memory: %v", err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("INFO memory: %q: %v", line, err)
				}
				return n
			}
		}
		t.Skipf("no used_memory in INFO memory of %s (miniredis?)", addr)
		return 0
	}
	s := redisBackend([]string{addr})(t)().(*Redis)
	// Cache the scripts first, so the script cache is not counted.
	for _, sc := range []*redis.Script{seenScript, recordScript} {
		if err := sc.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	parts := 32 // the default --partition-count
	if v := os.Getenv("TRAWLER_BENCH_PARTITIONS"); v != "" {
		var err error
		if parts, err = strconv.Atoi(v); err != nil || parts < 1 {
			t.Fatalf("TRAWLER_BENCH_PARTITIONS=%q", v)
		}
	}
	before := usedMemory()
	const batch = 10_000
	byPart := make([][]uint64, parts)
	for i := 0; i < n; i += batch {
		for p := range byPart {
			byPart[p] = byPart[p][:0]
		}
		for j := i; j < min(i+batch, n); j++ {
			byPart[j%parts] = append(byPart[j%parts], mix64(uint64(j))) // a bijection: all distinct
		}
		for p, fps := range byPart {
			if err := s.Record(ctx, p, fps); err != nil {
				t.Fatal(err)
			}
		}
		if done := i + batch; progress && done%2_000_000 == 0 && done < n {
			t.Logf("%9d fingerprints: %.2f bytes/URL (approx.: client buffers included)",
				done, float64(usedMemory()-before)/float64(done))
		}
	}
	var count int64
	for p := range parts {
		count += mustCount(t, s, p)
	}
	if count != int64(n) {
		t.Fatalf("Count = %d, want %d", count, n)
	}
	for j, want := range map[int]bool{0: true, n - 1: true, n: false} {
		if got := mustSeen(t, s, j%parts, []uint64{mix64(uint64(j))}); got[0] != want {
			t.Errorf("Seen(fingerprint %d) = %v", j, got[0])
		}
	}
	s.Close() // frees the connection's buffers on the server
	after := usedMemory()

	// Cross-check: MEMORY USAGE of the seen keys (key, value and dict
	// entry; not the keyspace's hash table slots).
	keys, err := scanKeys(ctx, c, s.prefix)
	if err != nil {
		t.Fatal(err)
	}
	var usage int64
	cmds, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, k := range keys {
			pipe.MemoryUsage(ctx, k, 0)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		usage += cmd.(*redis.IntCmd).Val()
	}
	nkeys := len(keys)
	perURL := float64(after-before) / float64(n)
	t.Logf("%d fingerprints over %d partitions in %d keys: used_memory +%d bytes = %.2f bytes/URL; MEMORY USAGE sum %.2f bytes/URL",
		n, parts, nkeys, after-before, perURL, float64(usage)/float64(n))
	return perURL
}

// mix64 is splitmix64's finalizer: a bijection of uint64 that scatters
// consecutive inputs like hashes.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
