// Package ownership shares a stateful service's partitions among its live
// replicas, one owner per partition at any moment, and hands partitions over
// as replicas come and go.
//
// It keeps two kinds of keys in a JetStream key-value bucket whose entries
// expire TTL after their last write (the server's clock decides):
//
//	member.<service>.<replica>   heartbeat of a live replica
//	lease.<service>.<p>          the owner of partition p
//
// Every replica computes the same assignment of partitions to the live
// members (rendezvous hashing: a replica joining or leaving moves only its
// share) and then converges on it: it releases partitions assigned to others
// and takes free ones assigned to itself. Taking is a Create, which fails
// while another replica's lease key exists; keeping is an Update on the
// revision it last wrote, which fails once anybody else wrote the key.
//
// Fencing: a replica stops a partition (Handler.Stop returns only when it no
// longer touches it) before its lease can expire: when a renewal fails, and
// at the latest TTL/2 after the last successful renewal even if it cannot
// reach NATS at all. The key then lives TTL after that renewal on the server,
// so nobody takes the partition before its old owner stopped, as long as
// Stop returns within TTL/2 and clocks run at the same rate.
package ownership

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// Handler starts and stops work on a partition. Both are called from one
// goroutine, never concurrently. Stop must return only once nothing of the
// partition's work is running (in-flight messages acked or left to
// redelivery); Start may return before the partition is fully warm.
type Handler interface {
	Start(p int)
	Stop(p int)
}

// Options configure a Member.
type Options struct {
	Service    string        // e.g. "dedup", "frontier": replicas of one service share partitions
	Replica    string        // unique per replica (e.g. pod name + random suffix)
	Partitions int           // P
	TTL        time.Duration // lease and heartbeat lifetime, default 15s
	Log        *slog.Logger
}

// Member is one replica's view of the ownership table.
type Member struct {
	kv jetstream.KeyValue
	o  Options
	h  Handler

	mu    sync.Mutex
	owned map[int]*lease // guarded by mu
	ready bool           // owns exactly its assignment; guarded by mu

	crash bool // tests: leave like kill -9 (no stop, no release)
}

type lease struct {
	rev     uint64    // revision of our last write
	renewed time.Time // local time of the last successful write
}

// Open creates or binds the bucket. Several services may share it.
func Open(ctx context.Context, js jetstream.JetStream, bucket string, o Options, h Handler) (*Member, error) {
	if o.Partitions < 1 || o.Service == "" || o.Replica == "" {
		return nil, errors.New("ownership: service, replica and partitions are required")
	}
	if strings.ContainsAny(o.Service+o.Replica, ". *>") {
		return nil, fmt.Errorf("ownership: service %q and replica %q must not contain dots, spaces or wildcards", o.Service, o.Replica)
	}
	if o.TTL <= 0 {
		o.TTL = 15 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	kv, err := bus.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: bucket, Description: "partition leases and replica heartbeats", TTL: o.TTL, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("ownership bucket %s: %w", bucket, err)
	}
	return &Member{kv: kv, o: o, h: h, owned: map[int]*lease{}}, nil
}

// Owned returns the partitions this replica owns now, ascending.
func (m *Member) Owned() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, 0, len(m.owned))
	for p := range m.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Ready reports whether the replica owns exactly the partitions assigned to
// it (for /readyz).
func (m *Member) Ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready
}

// Run keeps the replica's share until ctx ends, then stops and releases
// every partition it owns so the others take them at once.
func (m *Member) Run(ctx context.Context) error {
	tick := time.NewTicker(m.o.TTL / 5)
	defer tick.Stop()
	for {
		// Bounded, so that a NATS outage cannot hold a round past the
		// fencing deadline.
		stepCtx, cancel := context.WithTimeout(ctx, m.o.TTL/4)
		m.step(stepCtx)
		cancel()
		select {
		case <-ctx.Done():
			if !m.crash {
				m.releaseAll()
			}
			return nil
		case <-tick.C:
		}
	}
}

func (m *Member) memberKey() string { return "member." + m.o.Service + "." + m.o.Replica }
func (m *Member) leaseKey(p int) string {
	return "lease." + m.o.Service + "." + strconv.Itoa(p)
}

// step is one round: heartbeat, fence, assign, converge.
func (m *Member) step(ctx context.Context) {
	now := time.Now()
	// Fence first: a lease not renewed for TTL/2 may be about to expire.
	for p, l := range m.snapshot() {
		if now.Sub(l.renewed) > m.o.TTL/2 {
			m.o.Log.Warn("lease not renewed in time; stopping partition", "partition", p)
			m.stop(p)
		}
	}
	if _, err := m.kv.Put(ctx, m.memberKey(), []byte(now.UTC().Format(time.RFC3339Nano))); err != nil {
		m.o.Log.Warn("heartbeat failed", "err", err)
		m.setReady(false)
		return
	}
	members, err := m.members(ctx)
	if err != nil {
		m.o.Log.Warn("listing replicas failed", "err", err)
		m.setReady(false)
		return
	}
	want := map[int]bool{}
	for p := range m.o.Partitions {
		if Assign(p, members) == m.o.Replica {
			want[p] = true
		}
	}
	// Renew or give back what we hold.
	for p, l := range m.snapshot() {
		if !want[p] {
			m.stop(p)
			if err := m.kv.Delete(ctx, m.leaseKey(p), jetstream.LastRevision(l.rev)); err != nil {
				m.o.Log.Debug("release failed; the lease will expire", "partition", p, "err", err)
			}
			continue
		}
		rev, err := m.kv.Update(ctx, m.leaseKey(p), []byte(m.o.Replica), l.rev)
		if err != nil {
			if ctx.Err() == nil {
				m.o.Log.Warn("lease lost; stopping partition", "partition", p, "err", err)
			}
			m.stop(p)
			continue
		}
		m.mu.Lock()
		m.owned[p] = &lease{rev: rev, renewed: time.Now()}
		m.mu.Unlock()
	}
	// Take what is assigned to us and free.
	complete := true
	for p := range want {
		if m.owns(p) {
			continue
		}
		rev, err := m.kv.Create(ctx, m.leaseKey(p), []byte(m.o.Replica))
		if err != nil {
			complete = false // still held by its previous owner: next round
			continue
		}
		m.mu.Lock()
		m.owned[p] = &lease{rev: rev, renewed: time.Now()}
		m.mu.Unlock()
		m.o.Log.Info("took partition", "partition", p)
		m.h.Start(p)
	}
	m.setReady(complete)
}

// members lists the live replicas of the service, sorted.
func (m *Member) members(ctx context.Context) ([]string, error) {
	lister, err := m.kv.ListKeysFiltered(ctx, "member."+m.o.Service+".*")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return []string{m.o.Replica}, nil
		}
		return nil, err
	}
	defer lister.Stop()
	var out []string
	for k := range lister.Keys() {
		out = append(out, strings.TrimPrefix(k, "member."+m.o.Service+"."))
	}
	if !slices.Contains(out, m.o.Replica) {
		out = append(out, m.o.Replica)
	}
	slices.Sort(out)
	return out, nil
}

func (m *Member) snapshot() map[int]lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int]lease, len(m.owned))
	for p, l := range m.owned {
		out[p] = *l
	}
	return out
}

func (m *Member) owns(p int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned[p] != nil
}

func (m *Member) setReady(r bool) {
	m.mu.Lock()
	m.ready = r
	m.mu.Unlock()
}

// stop stops partition p's work and forgets the lease.
func (m *Member) stop(p int) {
	if !m.owns(p) {
		return
	}
	m.h.Stop(p)
	m.mu.Lock()
	delete(m.owned, p)
	m.ready = false
	m.mu.Unlock()
}

// releaseAll stops every partition, then deletes its lease key (a graceful
// leave: the others need not wait for the TTL), and the heartbeat.
func (m *Member) releaseAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for p, l := range m.snapshot() {
		m.stop(p)
		_ = m.kv.Delete(ctx, m.leaseKey(p), jetstream.LastRevision(l.rev))
	}
	_ = m.kv.Delete(ctx, m.memberKey())
}

// Assign is the rendezvous (highest random weight) owner of partition p
// among members: every replica computes the same answer from the same list,
// and a member joining or leaving moves only the partitions it wins or held.
func Assign(p int, members []string) string {
	var best string
	var bestW uint64
	for _, mem := range members {
		w := xxhash.Sum64String(mem + "/" + strconv.Itoa(p))
		if best == "" || w > bestW || (w == bestW && cmp.Less(mem, best)) {
			best, bestW = mem, w
		}
	}
	return best
}
