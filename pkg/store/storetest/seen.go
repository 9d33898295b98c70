package storetest

// The seen set: recording, its properties, counting and scanning.

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trawlerhq/trawler/pkg/store"
)

func testSeenRecord(t *testing.T, open Opener) {
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
	fps := make([]uint64, 3*4096+17)
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

// testSeenProperty runs random Seen and Record batches, with repeats inside
// and across batches, against an exact map. Fingerprints are drawn so that
// buckets fill densely, halves tie, and extremes and bucket-straddling big
// batches occur.
func testSeenProperty(t *testing.T, open Opener) {
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
		case round%97 == 50: // more than one Redis script call (4096) in one bucket: calls split it
			for range 4096 + 1500 {
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
func testScanCount(t *testing.T, open Opener) {
	s, ctx := open(), context.Background()
	const p = 4
	if n := mustCount(t, s, p); n != 0 {
		t.Errorf("Count of an empty partition = %d", n)
	}
	if chunks := scanChunks(t, s, p); len(chunks) != 0 {
		t.Errorf("Scan of an empty partition called fn %d times", len(chunks))
	}
	mustApply(t, s, p, 1, []store.Queued{q("a", "http://a/")}, nil) // a partition with no fingerprints
	if n := mustCount(t, s, p); n != 0 {
		t.Errorf("Count without fingerprints = %d", n)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	want := map[uint64]bool{}
	var all []uint64
	for len(want) < 2*ScanChunk+1000 {
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
		if len(c) == 0 || len(c) > ScanChunk {
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

func mustSeen(t testing.TB, s store.Store, p int, fps []uint64) []bool {
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

func mustCount(t testing.TB, s store.Store, p int) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), p)
	if err != nil {
		t.Fatalf("Count(%d): %v", p, err)
	}
	return n
}

// scanChunks returns what Scan hands fn, chunk by chunk.
func scanChunks(t testing.TB, s store.Store, p int) [][]uint64 {
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
