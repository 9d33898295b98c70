package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/config"
)

// gatheringResolver answers every name with a loopback address once want
// lookups are in flight together (or after a few seconds), and records the
// most it saw at once.
type gatheringResolver struct {
	want int
	mu   sync.Mutex
	now  int
	most int
	all  chan struct{} // closed when want lookups were in flight
}

func (r *gatheringResolver) LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.now++
	r.most = max(r.most, r.now)
	if r.now == r.want {
		close(r.all)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.now--
		r.mu.Unlock()
	}()
	select {
	case <-r.all:
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// The seeds' names are looked up together, not one after the other: a seeds
// file of a thousand hosts waited a thousand round trips before the first
// request. Kept seeds stay in their order.
func TestUnrefusedSeedsLooksUpTogether(t *testing.T) {
	const n = 5
	res := &gatheringResolver{want: n, all: make(chan struct{})}
	var seeds []string
	for i := range n {
		seeds = append(seeds, fmt.Sprintf("http://host%d.test/", i))
	}
	cfg := config.Config{FetchTimeout: 10 * time.Second, AllowPrivate: true}
	kept, err := unrefusedSeeds(context.Background(), cfg, res, seeds, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, seeds) {
		t.Errorf("kept %v, want %v", kept, seeds)
	}
	if res.most < n {
		t.Errorf("at most %d lookups at once, want the %d seeds' together", res.most, n)
	}
}
