package urltrace

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

type block struct {
	p   int
	fps []uint64
}

func randomBlocks(seed uint64, n int) []block {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []block
	for range n {
		fps := make([]uint64, 1+r.IntN(300))
		for i := range fps {
			fps[i] = r.Uint64()
		}
		fps[0] = 0 // edge values survive
		fps[len(fps)-1] = ^uint64(0)
		out = append(out, block{r.IntN(200), fps})
	}
	return out
}

func encode(t *testing.T, h Header, blocks []block) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if err := w.Write(b.p, b.fps); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(data []byte) (Header, []block, bool, error) {
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return Header{}, nil, false, err
	}
	var out []block
	for {
		p, fps, err := r.Next()
		if err == io.EOF {
			return r.Header(), out, r.Torn(), nil
		}
		if err != nil {
			return r.Header(), out, false, err
		}
		out = append(out, block{p, slices.Clone(fps)})
	}
}

func TestRoundTrip(t *testing.T) {
	blocks := randomBlocks(1, 50)
	h := Header{Kind: Cross, Partitions: 200}
	data := encode(t, h, blocks)
	gotH, got, torn, err := decode(data)
	if err != nil || torn || gotH != h {
		t.Fatalf("header %+v torn %v err %v", gotH, torn, err)
	}
	if len(got) != len(blocks) {
		t.Fatalf("%d blocks, want %d", len(got), len(blocks))
	}
	total := 0
	for i := range blocks {
		if got[i].p != blocks[i].p || !slices.Equal(got[i].fps, blocks[i].fps) {
			t.Fatalf("block %d differs", i)
		}
		total += len(blocks[i].fps)
	}
	// Compact: 8 bytes a fingerprint plus at most 4+3+3 per block.
	if max := headerSize + 8*total + 10*len(blocks); len(data) > max {
		t.Fatalf("%d bytes for %d fingerprints in %d blocks, want <= %d", len(data), total, len(blocks), max)
	}
}

func TestWriteSplitsLongSlices(t *testing.T) {
	fps := make([]uint64, 2*MaxBlock+5)
	for i := range fps {
		fps[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	_, got, _, err := decode(encode(t, Header{Kind: Full, Partitions: 1}, []block{{3, fps}}))
	if err != nil || len(got) != 3 {
		t.Fatalf("%d blocks, err %v", len(got), err)
	}
	var all []uint64
	for _, b := range got {
		all = append(all, b.fps...)
	}
	if !slices.Equal(all, fps) {
		t.Fatal("fingerprints differ after splitting")
	}
}

// TestTornTail cuts the file at every byte of its last two blocks: the reader
// returns every whole block before the cut, flags a partial one as torn, and
// never fails.
func TestTornTail(t *testing.T) {
	blocks := randomBlocks(2, 6)
	h := Header{Kind: Full, Partitions: 200}
	data := encode(t, h, blocks)
	// ends[i] is the file length after i+1 blocks.
	var ends []int
	for i := range blocks {
		ends = append(ends, len(encode(t, h, blocks[:i+1])))
	}
	for cut := ends[3]; cut <= len(data); cut++ {
		_, got, torn, err := decode(data[:cut])
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		whole := 0
		for _, e := range ends {
			if e <= cut {
				whole++
			}
		}
		if len(got) != whole || torn != !slices.Contains(ends, cut) {
			t.Fatalf("cut at %d: %d blocks torn %v, want %d blocks", cut, len(got), torn, whole)
		}
		for i := range got {
			if !slices.Equal(got[i].fps, blocks[i].fps) {
				t.Fatalf("cut at %d: block %d differs", cut, i)
			}
		}
	}
	// Garbage at the end (a filesystem may leave zeros) is a torn tail too.
	_, got, torn, err := decode(append(slices.Clone(data), 0, 0, 0, 0, 0, 0))
	if err != nil || !torn || len(got) != 6 {
		t.Fatalf("zero tail: %d blocks torn %v err %v", len(got), torn, err)
	}
}

func TestCorruptionInTheMiddle(t *testing.T) {
	data := encode(t, Header{Kind: Full, Partitions: 4}, randomBlocks(3, 5))
	bad := slices.Clone(data)
	bad[headerSize+20] ^= 0xff // inside the first block
	_, _, _, err := decode(bad)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: err %v, want ErrCorrupt", err)
	}
	for _, hd := range [][]byte{nil, []byte("TRAWL"), []byte("NOTATRACE_______"), append([]byte("TRAWLTR\x09"), make([]byte, 8)...)} {
		if _, err := NewReader(bytes.NewReader(hd)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("header %q: err %v", hd, err)
		}
	}
	if _, err := NewWriter(io.Discard, Header{Kind: 'Q', Partitions: 1}); err == nil {
		t.Error("unknown kind accepted")
	}
}

// TestConcurrentWritesKeepPartitionOrder has a goroutine per partition write
// a numbered sequence; reading back, each partition's sequence is intact.
func TestConcurrentWritesKeepPartitionOrder(t *testing.T) {
	dir := t.TempDir()
	w, path, err := Create(dir, Header{Kind: Full, Partitions: 8})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || filepath.Ext(path) != ".urltrace" {
		t.Fatalf("path %s", path)
	}
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 500 {
				_ = w.Write(p, []uint64{uint64(p)<<32 | uint64(2*i), uint64(p)<<32 | uint64(2*i+1)})
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	all, h, torn, err := ReadFile(path, AllPartitions)
	if err != nil || torn || h.Partitions != 8 || len(all) != 8*1000 {
		t.Fatalf("%d fps, header %+v, torn %v, err %v", len(all), h, torn, err)
	}
	next := map[uint64]uint64{}
	for _, fp := range all {
		p := fp >> 32
		if fp&0xffffffff != next[p] {
			t.Fatalf("partition %d: got %d, want %d", p, fp&0xffffffff, next[p])
		}
		next[p]++
	}
	three, _, _, err := ReadFile(path, 3)
	if err != nil || len(three) != 1000 || three[999] != 3<<32|999 {
		t.Fatalf("partition 3: %d fps, err %v", len(three), err)
	}
	parts, _, _, err := ReadPartitions(path)
	if err != nil || len(parts) != 8 || !slices.Equal(parts[3], three) {
		t.Fatalf("ReadPartitions: %d partitions, err %v", len(parts), err)
	}
	// A crash mid-block: the file cut short still reads.
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	cut, _, torn, err := ReadFile(path, AllPartitions)
	if err != nil || !torn || len(cut) != 8*1000-2 {
		t.Fatalf("truncated: %d fps torn %v err %v", len(cut), torn, err)
	}
}
