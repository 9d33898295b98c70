package fetcher

// The per-IP limit: a fetch waits for a lease on its server's address (the
// first the guard lets through), and hands its URL back when none comes.

import (
	"context"
	"net/url"
	"time"
)

// gatedFetch fetches rawURL within its server's per-IP limit, waiting at
// most maxWait for a slot. Without a slot it returns nil and the wait left,
// or the lease table's error.
func (s *Service) gatedFetch(ctx context.Context, rawURL string, fo FetchOptions, maxWait time.Duration) (*Response, time.Duration, error) {
	lease, wait, err := s.ipGate.Wait(ctx, s.addressOf(ctx, rawURL), maxWait)
	if err != nil || (lease == nil && wait > 0) {
		return nil, wait, err
	}
	resp := s.client.FetchWith(ctx, rawURL, fo)
	if lease != nil {
		// Off the critical path: the done message need not wait for it.
		go func() {
			if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
				s.o.Log.Warn("releasing per-IP lease failed; it will expire", "url", rawURL, "err", err)
			}
		}()
	}
	return &resp, 0, nil
}

// ipKeep is how long the fetcher keeps a per-IP lease after its request,
// for its next request to the same address (ipgate.Options.Keep): longer
// than a host's turn at the benchmark's delays, short enough that another
// fetcher waiting for the address's last slot waits little.
const ipKeep = 2 * time.Second

// ipMaxWait is how long a worker waits for its server's per-IP slot before
// handing the URL back to the frontier (which keeps the host resting).
const ipMaxWait = 2 * time.Second

// robotsIPWait is the same for a robots.txt fetch, which holds up every URL
// of its host: it may wait longer.
const robotsIPWait = 30 * time.Second

// addressOf is the address the request for rawURL will most likely go to:
// the first the address guard lets through, which the dialer tries first.
// "" when unknown or refused (the gate then lets the request through, takes
// no lease on an address never connected to, and the fetch reports the
// resolution error or the refusal). The lookup is bounded as the fetch's
// own is: a name whose servers do not answer must not cost more here than
// the fetch would spend on it.
func (s *Service) addressOf(ctx context.Context, rawURL string) string {
	if s.ipGate == nil {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	addrs, err := s.client.fetchable(ctx, u.Hostname())
	if err != nil || len(addrs) == 0 {
		return ""
	}
	return addrs[0].String()
}
