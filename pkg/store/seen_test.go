package store

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// testSeenProperty runs random Seen and Record batches, with repeats inside
// and across batches, against an exact map. Fingerprints are drawn so that
// buckets fill densely, halves tie, and extremes and bucket-straddling big
// batches occur.
func testSeenProperty(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	const seed = 20240611
	rng := rand.New(rand.NewPCG(seed, 1))
	parts := []int{0, 9}
	exact := map[int]map[uint64]bool{0: {}, 9: {}}
	var recorded []uint64
	extremes := []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 1<<63 - 1,
		1 << 32, 1<<32 - 1, 0xffff << 48, 0xffff<<48 - 1, 0x0001 << 48, 0x8000_0000_8000_0000}
	gen := func() uint64 {
		switch rng.IntN(8) {
		case 0, 1:
			if len(recorded) > 0 {
				return recorded[rng.IntN(len(recorded))]
			}
			return rng.Uint64()
		case 2: // a few dense buckets: low halves differ, high halves tie
			return uint64(rng.IntN(3))<<48 | rng.Uint64N(200)
		case 3: // one bucket, high halves differ, low halves tie
			return 0x7f<<56 | rng.Uint64N(50)<<32 | rng.Uint64N(3)
		case 4: // bytes with the top bit set in both halves
			return 0x8080_8080_8080_8080 | uint64(rng.IntN(256))<<32 | uint64(rng.IntN(256))
		case 5:
			return extremes[rng.IntN(len(extremes))]
		default:
			return rng.Uint64()
		}
	}
	for round := range 400 {
		p := parts[rng.IntN(len(parts))]
		var batch []uint64
		switch {
		case round%97 == 50: // more than seenChunk in one bucket: calls split it
			for range seenChunk + 1500 {
				batch = append(batch, 0x1234<<48|rng.Uint64N(1<<40))
			}
			batch = append(batch, batch[:300]...)
		default:
			for range rng.IntN(300) {
				batch = append(batch, gen())
			}
		}
		if rng.IntN(2) == 0 {
			got := mustSeen(t, s, p, batch)
			for i, fp := range batch {
				if got[i] != exact[p][fp] {
					t.Fatalf("seed %d round %d: Seen(p%d)[%d] (%#x) = %v, want %v", seed, round, p, i, fp, got[i], exact[p][fp])
				}
			}
			continue
		}
		if err := s.Record(ctx, p, batch); err != nil {
			t.Fatalf("round %d: Record: %v", round, err)
		}
		for _, fp := range batch {
			if !exact[p][fp] {
				exact[p][fp] = true
				recorded = append(recorded, fp)
			}
		}
		if got := mustCount(t, s, p); got != int64(len(exact[p])) {
			t.Fatalf("seed %d round %d: Count(p%d) = %d, want %d", seed, round, p, got, len(exact[p]))
		}
	}
	for _, p := range parts {
		want := make([]uint64, 0, len(exact[p]))
		for fp := range exact[p] {
			want = append(want, fp)
		}
		slices.Sort(want)
		if got := slices.Concat(scanChunks(t, s, p)...); !slices.Equal(got, want) {
			t.Errorf("Scan(p%d): %d fingerprints, want %d (equal sets in ascending order)", p, len(got), len(want))
		}
		// Everything recorded is seen, including through another batch mix.
		for i, ok := range mustSeen(t, s, p, want) {
			if !ok {
				t.Fatalf("p%d: recorded %#x not seen", p, want[i])
			}
		}
	}
}

// testScanCount checks that Scan streams exactly what was recorded, in
// ascending order and bounded chunks, and that Count counts distinct ones.
func testScanCount(t *testing.T, open opener) {
	s, ctx := open(), context.Background()
	const p = 4
	if n := mustCount(t, s, p); n != 0 {
		t.Errorf("Count of an empty partition = %d", n)
	}
	if chunks := scanChunks(t, s, p); len(chunks) != 0 {
		t.Errorf("Scan of an empty partition called fn %d times", len(chunks))
	}
	mustApply(t, s, p, 1, []Queued{q("a", "http://a/")}, nil) // a partition with no fingerprints
	if n := mustCount(t, s, p); n != 0 {
		t.Errorf("Count without fingerprints = %d", n)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	want := map[uint64]bool{}
	var all []uint64
	for len(want) < 2*scanChunk+1000 {
		batch := make([]uint64, 0, 10_000)
		for range 9_000 {
			batch = append(batch, rng.Uint64())
		}
		for range 1_000 { // repeats, from this batch and earlier ones
			if len(all) > 0 {
				batch = append(batch, all[rng.IntN(len(all))])
			}
		}
		batch = append(batch, 0, math.MaxUint64)
		if err := s.Record(ctx, p, batch); err != nil {
			t.Fatal(err)
		}
		for _, fp := range batch {
			if !want[fp] {
				want[fp] = true
				all = append(all, fp)
			}
		}
	}
	if n := mustCount(t, s, p); n != int64(len(want)) {
		t.Errorf("Count = %d, want %d", n, len(want))
	}
	chunks := scanChunks(t, s, p)
	if len(chunks) < 3 {
		t.Errorf("Scan of %d fingerprints came in %d chunks, want at least 3", len(want), len(chunks))
	}
	for i, c := range chunks {
		if len(c) == 0 || len(c) > scanChunk {
			t.Errorf("chunk %d has %d fingerprints", i, len(c))
		}
	}
	got := slices.Concat(chunks...)
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Fatalf("Scan returned %d fingerprints (sorted: %v), want the %d recorded, ascending",
			len(got), slices.IsSorted(got), len(all))
	}

	// Recording again changes nothing; other partitions are untouched.
	if err := s.Record(ctx, p, all[:5000]); err != nil {
		t.Fatal(err)
	}
	if n := mustCount(t, s, p); n != int64(len(all)) {
		t.Errorf("Count after re-recording = %d, want %d", n, len(all))
	}
	if n, chunks := mustCount(t, s, p+1), scanChunks(t, s, p+1); n != 0 || len(chunks) != 0 {
		t.Errorf("partition %d: Count %d, %d chunks", p+1, n, len(chunks))
	}

	// An error from fn stops the scan and comes back as is.
	stop := errors.New("stop")
	calls := 0
	err := s.Scan(ctx, p, func([]uint64) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Scan with a failing fn: %v after %d calls, want stop after 1", err, calls)
	}

	// fn may use the store, e.g. copy a partition (bbolt: no deadlock).
	err = s.Scan(ctx, p, func(fps []uint64) error { return s.Record(ctx, p+2, fps) })
	if err != nil {
		t.Fatalf("Scan copying into p%d: %v", p+2, err)
	}
	if n := mustCount(t, s, p+2); n != int64(len(all)) {
		t.Errorf("copied partition counts %d, want %d", n, len(all))
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Scan(cctx, p, func([]uint64) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a canceled context: %v", err)
	}
}

// testSeenFormat checks that a Redis partition whose seen set has another
// layout (bucket count, version, or the old Redis set) is refused.
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
	must(rs.c.HSet(ctx, meta, "buckets", "4096").Err())
	refused("format 2 with 4096 buckets")
	must(rs.c.HSet(ctx, meta, "format", "3", "buckets", strconv.Itoa(seenBuckets)).Err())
	refused("format 3 with 65536 buckets")
	must(rs.c.Del(ctx, meta).Err())
	must(rs.c.SAdd(ctx, meta, "\x00\x00\x00\x00\x00\x00\x00\x01").Err()) // format 1: one Redis set
	refused("is a Redis set")

	// The refused Record wrote nothing; other partitions work.
	must(rs.c.Del(ctx, meta).Err())
	must(rs.c.HSet(ctx, meta, "format", seenFormat, "buckets", seenBuckets, "count", 3).Err())
	if got := mustSeen(t, s, p, []uint64{1, 4}); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("after restoring the format: Seen = %v", got)
	}
	if got := mustSeen(t, s, p+1, []uint64{1}); got[0] {
		t.Error("another partition sees 1")
	}
}

// TestSeenCalls checks the grouping of a batch into script calls.
func TestSeenCalls(t *testing.T) {
	r := NewRedis(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), "x")
	defer r.Close()
	var fps []uint64
	for i := range seenChunk + 10 { // bucket 1 straddles the two calls
		fps = append(fps, 1<<48|uint64(i))
	}
	fps = append([]uint64{0, 5}, fps...)
	fps = append(fps, 0xffff<<48)
	calls := r.seenCalls(3, fps)
	if len(calls) != 2 || calls[0].n != seenChunk || calls[1].n != len(fps)-seenChunk {
		t.Fatalf("got %d calls", len(calls))
	}
	want := [][]string{
		{"x:{x:p3}:seen", "x:{x:p3}:seen:0000", "x:{x:p3}:seen:0001"},
		{"x:{x:p3}:seen", "x:{x:p3}:seen:0001", "x:{x:p3}:seen:ffff"},
	}
	for i, c := range calls {
		if !slices.Equal(c.keys, want[i]) {
			t.Errorf("call %d keys %v, want %v", i, c.keys, want[i])
		}
		if c.args[0] != seenFormat || c.args[1] != seenBuckets || len(c.args) != len(c.keys)+1 {
			t.Errorf("call %d args %v", i, c.args[:2])
		}
	}
	if got := len(calls[0].args[2].([]byte)); got != 16 {
		t.Errorf("bucket 0 argument has %d bytes, want 16", got)
	}
}

// TestRedisSeenSetBytesPerURL measures the seen set's memory from Redis's
// INFO (used_memory before and after) for distinct fingerprints in one
// partition of a fresh prefix: 10,000,000 with TRAWLER_BENCH_FULL=1, where it
// must stay <= 12 bytes per URL, else 200,000 and the figure is only logged
// (at that fill the cost per key dominates; see docs/store.md).
func TestRedisSeenSetBytesPerURL(t *testing.T) {
	n, full := 200_000, os.Getenv("TRAWLER_BENCH_FULL") == "1"
	if full {
		n = 10_000_000
	}
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
	const p = 0
	before := usedMemory()
	const batch = 10_000
	fps := make([]uint64, batch)
	for i := 0; i < n; i += batch {
		for j := range fps {
			fps[j] = mix64(uint64(i + j)) // a bijection: all distinct
		}
		if err := s.Record(ctx, p, fps[:min(batch, n-i)]); err != nil {
			t.Fatal(err)
		}
		if done := i + batch; full && done%2_000_000 == 0 && done < n {
			t.Logf("%9d fingerprints: %.2f bytes/URL (approx.: client buffers included)",
				done, float64(usedMemory()-before)/float64(done))
		}
	}
	if got := mustCount(t, s, p); got != int64(n) {
		t.Fatalf("Count = %d, want %d", got, n)
	}
	if got := mustSeen(t, s, p, []uint64{mix64(0), mix64(uint64(n - 1)), mix64(uint64(n))}); !slices.Equal(got, []bool{true, true, false}) {
		t.Errorf("Seen = %v", got)
	}
	s.Close() // frees the connection's buffers on the server
	after := usedMemory()

	// Cross-check: MEMORY USAGE of the partition's seen keys (key, value and
	// dict entry; not the keyspace's hash table slots).
	keys := []string{s.seenMetaKey(p)}
	for b := range seenBuckets {
		keys = append(keys, seenBucketKey(s.base(p), b))
	}
	var usage int64
	cmds, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, k := range keys {
			pipe.MemoryUsage(ctx, k, 0)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	nkeys := 0
	for _, cmd := range cmds {
		if v, err := cmd.(*redis.IntCmd).Result(); err == nil {
			usage += v
			nkeys++
		}
	}
	perURL := float64(after-before) / float64(n)
	t.Logf("%d fingerprints in %d keys: used_memory +%d bytes = %.2f bytes/URL; MEMORY USAGE sum %.2f bytes/URL",
		n, nkeys, after-before, perURL, float64(usage)/float64(n))
	if full && perURL > 12 {
		t.Errorf("%.2f bytes/URL, want <= 12", perURL)
	}
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
