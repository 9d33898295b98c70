package store

// Helpers both backends (Bolt and Redis) use, so that their semantics stay
// identical: argument checks, the encoding of queued URLs and tasks, derived
// task IDs and the budget rule.

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// checkArgs rejects a done context and a negative partition.
func checkArgs(ctx context.Context, p int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p < 0 {
		return fmt.Errorf("store: invalid partition %d", p)
	}
	return nil
}

// validHost rejects host names that would break the key layouts.
func validHost(h string) error {
	if h == "" || strings.ContainsRune(h, 0) {
		return fmt.Errorf("store: invalid host %q", h)
	}
	return nil
}

type encodedQueued struct {
	host string
	rank uint64
	data []byte
}

// encodeQueued validates and JSON-encodes an intake batch; a URL without an
// attempt count is a new one (Attempt 1).
func encodeQueued(enqueue []Queued) ([]encodedQueued, error) {
	out := make([]encodedQueued, len(enqueue))
	for i, q := range enqueue {
		if err := validHost(q.Host); err != nil {
			return nil, err
		}
		if q.Attempt < 1 {
			q.Attempt = 1
		}
		data, err := marshal(q)
		if err != nil {
			return nil, fmt.Errorf("store: encode %s: %w", q.Link.URL, err)
		}
		out[i] = encodedQueued{q.Host, rank(q.Link), data}
	}
	return out, nil
}

// scheduledQueued is the queue entries of promoted revisits.
func scheduledQueued(ss []Scheduled) []Queued {
	out := make([]Queued, len(ss))
	for i, s := range ss {
		out[i] = s.Queued
	}
	return out
}

// DerivedTaskID is the task ID of queue entry q under key (the entry's
// place: host, rank and order) in partition p, for an Issue without one: a
// hash of the partition, the key, the URL and the attempt. The same entry
// popped again gets the same ID; a different URL never does (but for a
// 64-bit collision), so a message ID JetStream drops as a duplicate is
// always a fetch of the same URL.
func DerivedTaskID(p int, key []byte, q Queued) string {
	d := xxhash.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(p))
	_, _ = d.Write(b[:])
	binary.BigEndian.PutUint64(b[:], uint64(len(key)))
	_, _ = d.Write(b[:])
	_, _ = d.Write(key)
	_, _ = d.WriteString(q.Link.URL)
	binary.BigEndian.PutUint64(b[:], uint64(q.Attempt))
	_, _ = d.Write(b[:])
	return fmt.Sprintf("p%d-%016x", p, d.Sum64())
}

// newInFlight builds the task issued for queued URL q.
func newInFlight(p int, q Queued, r Issue) InFlight {
	return InFlight{
		Task: messages.FetchTask{
			V:         messages.Version,
			ID:        r.TaskID,
			Partition: p,
			Host:      r.Host,
			URL:       q.Link.URL,
			Depth:     q.Link.Depth,
			Hops:      q.Link.Hops,
			Score:     q.Link.Score,
			Attempt:   q.Attempt,
			IssuedAt:  r.IssuedAt,
			Deadline:  r.Deadline,
			NotBefore: r.NotBefore,
			Sitemap:   q.Link.Sitemap,
			Revisit:   q.Link.Revisit,
		},
		LeaseUntil: r.LeaseUntil,
	}
}

// retry is the queue entry that re-issues an expired task's URL.
func retry(in InFlight) Queued {
	t := in.Task
	return Queued{
		Host:    t.Host,
		Link:    messages.Link{URL: t.URL, Depth: t.Depth, Hops: t.Hops, Score: t.Score, Sitemap: t.Sitemap, Revisit: t.Revisit},
		Attempt: t.Attempt + 1,
	}
}

func decodeInFlight(data []byte) (InFlight, error) {
	var in InFlight
	err := unmarshal(data, &in)
	return in, err
}

// grant is TakeBudget's rule: unlimited when max <= 0, else what is left.
func grant(n, max int, issued uint64) int {
	if n <= 0 {
		return 0
	}
	if max <= 0 {
		return n
	}
	if issued >= uint64(max) {
		return 0
	}
	return int(min(uint64(n), uint64(max)-issued))
}

func sortedHosts(m map[string]*HostState) []HostState {
	out := make([]HostState, 0, len(m))
	for _, h := range m {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b HostState) int { return strings.Compare(a.Host, b.Host) })
	return out
}
