package fetcher

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/pkg/ipgate"
)

// deadlineResolver records the deadline of the lookup's context and then
// waits for it to end, as a name whose servers never answer.
type deadlineResolver struct{ deadline chan time.Time }

func (r deadlineResolver) LookupNetIP(ctx context.Context, _ string) ([]netip.Addr, error) {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Time{}
	}
	r.deadline <- d
	<-ctx.Done()
	return nil, ctx.Err()
}

// Issue 19 #11: the per-IP gate's lookup of a host is bounded as the fetch's
// own is (its connect timeout), not by the resolver's retries.
func TestGateLookupIsBoundedByTheConnectTimeout(t *testing.T) {
	r := deadlineResolver{deadline: make(chan time.Time, 1)}
	s := &Service{ipGate: &ipgate.Gate{}, client: NewHTTPClient(HTTPOptions{Timeout: 3 * time.Second, ConnectTimeout: 200 * time.Millisecond, Resolver: r})}
	start := time.Now()
	if addr := s.addressOf(context.Background(), "http://silent.test/"); addr != "" {
		t.Fatalf("address %q of a name that never resolves", addr)
	}
	d := <-r.deadline
	if d.IsZero() || d.Sub(start) > 200*time.Millisecond+50*time.Millisecond {
		t.Fatalf("lookup deadline %v after the start, want the 200ms connect timeout", d.Sub(start))
	}
}
