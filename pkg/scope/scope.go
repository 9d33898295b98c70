// Package scope decides which discovered URLs a crawl follows. The scope is
// crawl-wide state in a JetStream key-value bucket, written by whoever injects
// seeds (trawler seed, trawler run) and read by every parser replica, so the
// seed command carries the crawl's scope and no service needs the seed list.
package scope

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// The scope modes (--scope): which links a crawl follows.
const (
	Host   = "host"   // stay on the seeds' hosts
	Domain = "domain" // stay on the seeds' registrable domains
	Any    = "any"    // follow every link
)

// entry is one value in the bucket. Keys: "any", "h.<hex host>", "d.<hex domain>".
type entry struct {
	Kind  string `json:"kind"` // host, domain or any
	Value string `json:"value,omitempty"`
}

// Scope is a cached, live view of the crawl's scope. The bucket holds only
// the seeds' hosts and domains (or "any"), so the whole of it is kept in
// memory and kept current by a watcher: once the watcher has delivered the
// bucket's initial values, a host that is in none of them is out of scope
// without a lookup and without remembering the host. (An earlier version
// remembered every out-of-scope host it was asked about, which grew without
// bound on a crawl that links to many other hosts, and looked each one up
// in the bucket three times.)
type Scope struct {
	kv jetstream.KeyValue

	mu      sync.RWMutex
	allowed map[string]bool // keys known to be present; small: one per seed host or domain
	synced  bool            // allowed holds the whole bucket; false before the watcher's first pass or after it stops
}

// BucketConfig is the scope bucket's configuration, for Open and for a
// caller that creates the bucket ahead of it (trawler run, at its start).
func BucketConfig(names subjects.Names) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: names.ScopeBucket(), Description: "crawl scope: seed hosts and domains", Storage: jetstream.FileStorage,
	}
}

// Open creates the bucket if needed and starts watching it until ctx ends.
func Open(ctx context.Context, js jetstream.JetStream, names subjects.Names) (*Scope, error) {
	kv, err := bus.KeyValue(ctx, js, BucketConfig(names))
	if err != nil {
		return nil, fmt.Errorf("scope bucket %s: %w", names.ScopeBucket(), err)
	}
	s := &Scope{kv: kv, allowed: map[string]bool{}}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch scope bucket: %w", err)
	}
	go s.watch(ctx, w)
	return s, nil
}

func (s *Scope) watch(ctx context.Context, w jetstream.KeyWatcher) {
	defer w.Stop()
	defer func() { // no longer current: ask the bucket again
		s.mu.Lock()
		s.synced = false
		s.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			s.mu.Lock()
			switch {
			case e == nil: // the initial values are all delivered
				s.synced = true
			case e.Operation() == jetstream.KeyValuePut:
				s.allowed[e.Key()] = true
			default: // deleted or purged: scopes only grow, but honour it
				delete(s.allowed, e.Key())
			}
			s.mu.Unlock()
		}
	}
}

// Add records the scope that seeds imply under mode (host, domain or any).
func (s *Scope) Add(ctx context.Context, mode string, seeds []string) error {
	for _, seed := range seeds {
		host, err := urlx.Host(seed)
		if err != nil {
			return fmt.Errorf("scope of seed %q: %w", seed, err)
		}
		key, e := keyFor(mode, host)
		if key == "" {
			return fmt.Errorf("scope mode %q: want host, domain or any", mode)
		}
		data, _ := json.Marshal(e)
		if _, err := s.kv.Put(ctx, key, data); err != nil {
			return fmt.Errorf("record scope %s: %w", key, err)
		}
		s.mu.Lock()
		s.allowed[key] = true
		s.mu.Unlock()
	}
	return nil
}

func keyFor(mode, host string) (string, entry) {
	switch mode {
	case Any:
		return "any", entry{Kind: mode}
	case Host:
		return "h." + hex.EncodeToString([]byte(host)), entry{Kind: mode, Value: host}
	case Domain:
		d := urlx.RegistrableDomain(host)
		return "d." + hex.EncodeToString([]byte(d)), entry{Kind: mode, Value: d}
	}
	return "", entry{}
}

// Allows reports whether URLs of host are in scope. It runs for every
// extracted link: the cheap keys are tried first, and the registrable domain
// (a public-suffix lookup) only when they miss. Only before the watcher has
// read the whole bucket is a host that matches nothing looked up in the
// bucket itself, so a seed added a moment ago by another process is honoured.
func (s *Scope) Allows(ctx context.Context, host string) (bool, error) {
	hostKey, _ := keyFor(Host, host)
	if s.cached("any", hostKey) {
		return true, nil
	}
	domainKey, _ := keyFor(Domain, host)
	if s.cached(domainKey) {
		return true, nil
	}
	s.mu.RLock()
	synced := s.synced
	s.mu.RUnlock()
	if synced {
		return false, nil
	}
	for _, k := range []string{"any", hostKey, domainKey} {
		_, err := s.kv.Get(ctx, k)
		if err == nil {
			s.mu.Lock()
			s.allowed[k] = true
			s.mu.Unlock()
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, fmt.Errorf("scope lookup %s: %w", host, err)
		}
	}
	return false, nil
}

// cached tells whether any of keys is known to be in the bucket.
func (s *Scope) cached(keys ...string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, k := range keys {
		if s.allowed[k] {
			return true
		}
	}
	return false
}
