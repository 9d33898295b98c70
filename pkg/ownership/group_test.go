package ownership

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testutil"
)

// A partition whose work fails is reported and started again; the
// replica's other partitions go on undisturbed and Serve does not end.
func TestServeRestartsAFailedPartition(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs [2]atomic.Int32
	reported := make(chan int, 4)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, []int{0, 1}, nil, func(ctx context.Context, p int) error {
			if runs[p].Add(1) == 1 && p == 1 {
				return errors.New("stream leader moved")
			}
			<-ctx.Done()
			return nil
		}, func(p int, err error, retryIn time.Duration) { reported <- p })
	}()
	select {
	case p := <-reported:
		if p != 1 {
			t.Fatalf("partition %d reported, want 1", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("failure not reported")
	}
	testutil.Eventually(t, 5*time.Second, "the failed partition to start again", func() bool { return runs[1].Load() >= 2 })
	if n := runs[0].Load(); n != 1 {
		t.Errorf("healthy partition ran %d times, want 1", n)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve ended early: %v", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
