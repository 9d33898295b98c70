package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/services/fetcher"
)

// ErrSeedsRefused is matched (errors.Is) by RunAll's error when the address
// guard refuses every seed; the error names the address, its class and the
// flag that allows it.
var ErrSeedsRefused = errors.New("every seed was refused")

// unrefusedSeeds returns the seeds the fetcher's address guard lets through
// (issue 18 #4). A refused seed is told at once and never handed to dedup:
// the same command again with the flag the refusal names then crawls it,
// whereas a URL dedup has seen would be dropped. Names are resolved as the
// fetch would (within its connect timeout); a seed that does not parse or
// resolve is kept, for Seed or the fetch to report. Links found later to a
// refused address are refused by the fetcher: recorded at once, not retried.
//
// res is the fetcher's resolver, so that a seed's name is looked up once
// for both. The seeds are checked seedChecks at a time: one after the
// other, a seeds file of a thousand hosts waited a thousand round trips to
// the DNS server before the first request.
func unrefusedSeeds(ctx context.Context, cfg config.Config, res hostResolver, seeds []string, log *slog.Logger) ([]string, error) {
	c := fetcher.NewHTTPClient(fetcher.HTTPOptions{Timeout: cfg.FetchTimeout, UserAgent: cfg.UserAgent,
		AllowPrivate: cfg.AllowPrivate, AllowLinkLocal: cfg.AllowLinkLocal, Resolver: res})
	errs := make([]error, len(seeds))
	var wg sync.WaitGroup
	checks := make(chan struct{}, seedChecks)
	for i, s := range seeds {
		checks <- struct{}{}
		wg.Go(func() {
			defer func() { <-checks }()
			errs[i] = c.CheckAddress(ctx, s)
		})
	}
	wg.Wait()
	var kept []string
	var refused []error
	for i, s := range seeds {
		if err := errs[i]; err != nil {
			log.Warn("seed refused by the address guard; not crawled", "seed", s, "err", err)
			refused = append(refused, err)
			continue
		}
		kept = append(kept, s)
	}
	if len(kept) == 0 && len(refused) > 0 {
		more := ""
		if len(refused) > 1 {
			more = fmt.Sprintf(" (and %d more seeds; see the log)", len(refused)-1)
		}
		return nil, fmt.Errorf("%w: %v%s", ErrSeedsRefused, refused[0], more)
	}
	return kept, nil
}

// seedChecks is how many seeds unrefusedSeeds checks at once.
const seedChecks = 32
