package record

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
)

// TestFullRecordsEachPartitionInOrder writes from one goroutine per
// partition, as dedup does, and reads each partition's stream back.
func TestFullRecordsEachPartitionInOrder(t *testing.T) {
	const P = 3
	f, err := OpenFull(t.TempDir(), P, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]uint64{}
	for p := range P {
		for b := range 50 {
			want[p] = append(want[p], uint64(p*1000+b), uint64(p*1000+b), 7) // repeats kept
		}
	}
	var wg sync.WaitGroup
	for p := range P {
		mine := want[p]
		wg.Go(func() {
			for b := range 50 {
				f.Fingerprints(p, slices.Clone(mine[3*b:3*b+3]))
			}
		})
	}
	wg.Wait()
	f.Fingerprints(0, nil) // an empty batch writes nothing
	if err := f.Close(); err != nil || f.Err() != nil {
		t.Fatal(err, f.Err())
	}
	if !strings.HasPrefix(filepath.Base(f.Path()), "full-") {
		t.Fatalf("path %s", f.Path())
	}
	for p := range P {
		got, h, torn, err := urltrace.ReadFile(f.Path(), p)
		if err != nil || torn || h.Kind != urltrace.Full || h.Partitions != P {
			t.Fatalf("read: %+v %v %v", h, torn, err)
		}
		if !slices.Equal(got, want[p]) {
			t.Errorf("partition %d: %v\nwant %v", p, got, want[p])
		}
	}
}

func TestOpenFailsOnABadDir(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFull(notDir, 1, nil); err == nil {
		t.Error("OpenFull in a file succeeded")
	}
	if _, err := OpenCross(notDir, 1, nil); err == nil {
		t.Error("OpenCross in a file succeeded")
	}
}

// failing is a disk that fills after limit bytes.
type failing struct{ n, limit int }

var errFull = errors.New("no space left on device")

func (w *failing) Write(b []byte) (int, error) {
	if w.n+len(b) > w.limit {
		return 0, errFull
	}
	w.n += len(b)
	return len(b), nil
}

// TestWriteErrorStopsTheTraceOnce: a full disk is logged once, stops the
// trace, and never panics or blocks the caller.
func TestWriteErrorStopsTheTraceOnce(t *testing.T) {
	w, err := urltrace.NewWriter(&failing{limit: 100 << 10}, urltrace.Header{Kind: urltrace.Full, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	f := &Full{file: &file{w: w, path: "disk", log: slog.New(slog.NewTextHandler(&logged, nil))}}
	fps := make([]uint64, 4096) // 32 KiB a batch: the buffer spills by the third
	for range 20 {
		f.Fingerprints(1, fps)
	}
	if !errors.Is(f.Err(), errFull) {
		t.Fatalf("Err %v, want the disk's error", f.Err())
	}
	if n := strings.Count(logged.String(), "tracing stops"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, logged.String())
	}
}
