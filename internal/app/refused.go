package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
func unrefusedSeeds(ctx context.Context, cfg config.Config, seeds []string, log *slog.Logger) ([]string, error) {
	res, err := newResolver(cfg, nil)
	if err != nil {
		return nil, err
	}
	c := fetcher.NewHTTPClient(fetcher.HTTPOptions{Timeout: cfg.FetchTimeout, UserAgent: cfg.UserAgent,
		AllowPrivate: cfg.AllowPrivate, AllowLinkLocal: cfg.AllowLinkLocal, Resolver: res})
	var kept []string
	var refused []error
	for _, s := range seeds {
		if err := c.CheckAddress(ctx, s); err != nil {
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
