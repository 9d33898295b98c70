package ownership

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// recorder is a Handler that checks, across replicas, that no partition is
// ever started while another replica runs it.
type recorder struct {
	mu      sync.Mutex
	running map[int]string // partition -> replica
	errs    []string
	starts  int
}

func (r *recorder) handler(replica string) Handler { return &recHandler{r, replica} }

type recHandler struct {
	r       *recorder
	replica string
}

func (h *recHandler) Start(p int) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if o, ok := h.r.running[p]; ok {
		h.r.errs = append(h.r.errs, fmt.Sprintf("partition %d started by %s while %s runs it", p, h.replica, o))
	}
	h.r.running[p] = h.replica
	h.r.starts++
}

func (h *recHandler) Stop(p int) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if h.r.running[p] == h.replica {
		delete(h.r.running, p)
	}
}

func (r *recorder) owners() map[int]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]string{}
	for p, o := range r.running {
		out[p] = o
	}
	return out
}

// Replicas join, leave gracefully and die: every partition always ends with
// exactly one owner, the assignment is shared fairly, and no partition is
// ever run by two replicas at once.
func TestOwnershipFollowsReplicas(t *testing.T) {
	js, _ := testbus.Start(t, 1)
	const P, ttl = 16, 600 * time.Millisecond
	rec := &recorder{running: map[int]string{}}
	type replica struct {
		m      *Member
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(name string) *replica {
		m, err := Open(context.Background(), js, "OWNERS", Options{Service: "frontier", Replica: name, Partitions: P, TTL: ttl}, rec.handler(name))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{m: m, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); _ = m.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	allOwnedBy := func(names ...string) func() bool {
		return func() bool {
			o := rec.owners()
			if len(o) != P {
				return false
			}
			count := map[string]int{}
			for _, n := range o {
				count[n]++
			}
			for _, n := range names {
				if count[n] == 0 {
					return false
				}
			}
			return len(count) == len(names)
		}
	}

	a := start("a")
	testutil.Eventually(t, 5*time.Second, "a owns all", allOwnedBy("a"))
	if !a.m.Ready() {
		t.Error("a not ready though it owns its whole assignment")
	}
	b := start("b")
	c := start("c")
	// Sharing is reached in steps: b may first take, from a, partitions
	// that belong to c once c is seen. Wait for the assignment itself, and
	// say which partitions are off if it never comes.
	assigned := func() bool {
		o := rec.owners()
		for p := 0; p < P; p++ {
			if o[p] != Assign(p, []string{"a", "b", "c"}) {
				return false
			}
		}
		return true
	}
	testutil.Eventually(t, 10*time.Second, "a, b and c share", allOwnedBy("a", "b", "c"))
	if !testutil.WaitFor(10*time.Second, 20*time.Millisecond, assigned) {
		for p, o := range rec.owners() {
			if want := Assign(p, []string{"a", "b", "c"}); o != want {
				t.Errorf("partition %d owned by %s, assigned to %s", p, o, want)
			}
		}
	}

	// Graceful leave: b releases at once.
	b.cancel()
	<-b.done
	testutil.Eventually(t, 10*time.Second, "a and c after b left", allOwnedBy("a", "c"))

	// A death: c stops heartbeating and renewing without stopping or
	// releasing anything (kill -9); its work dies with it. a takes c's
	// partitions only once their leases expired on the server.
	owned := c.m.Owned()
	c.m.crash = true
	c.cancel()
	<-c.done
	died := time.Now()
	rec.mu.Lock()
	for _, p := range owned {
		delete(rec.running, p)
	}
	rec.mu.Unlock()
	testutil.Eventually(t, 10*time.Second, "a alone", allOwnedBy("a"))
	if took := time.Since(died); took < ttl/2 {
		t.Errorf("a took a dead replica's partitions %v after it died; its leases had TTL %v", took, ttl)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.errs {
		t.Error(e)
	}
}

func TestAssignIsStableAndSpread(t *testing.T) {
	members := []string{"r1", "r2", "r3", "r4"}
	count := map[string]int{}
	for p := range 256 {
		count[Assign(p, members)]++
	}
	for _, m := range members {
		if count[m] < 32 {
			t.Errorf("%s got %d of 256 partitions", m, count[m])
		}
	}
	// Removing r4 moves only r4's partitions.
	for p := range 256 {
		before, after := Assign(p, members), Assign(p, members[:3])
		if before != "r4" && before != after {
			t.Errorf("partition %d moved from %s to %s though %s stayed", p, before, after, before)
		}
	}
}
