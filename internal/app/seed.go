package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/splitter"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// Seed records the scope the seeds imply (cfg.Scope) and hands them to dedup
// at depth 0. Invalid seeds are reported in the returned error, joined, while
// the valid ones are still injected; n counts those. Seeding twice is
// harmless: dedup drops what it has seen.
func Seed(ctx context.Context, d *Deps, raw []string) (n int, err error) {
	var links []messages.Link
	var canon []string
	var errs []error
	for _, r := range raw {
		c, err := urlx.Canonicalize(r)
		if err == nil && len(c) > d.Config.MaxURLLength {
			err = fmt.Errorf("longer than --max-url-length %d", d.Config.MaxURLLength)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid seed %q: %w", r, err))
			continue
		}
		canon = append(canon, c)
		links = append(links, messages.Link{URL: c, Depth: 0})
	}
	if len(links) == 0 {
		return 0, errors.Join(append(errs, errors.New("no valid seed URL"))...)
	}
	sc, err := scope.Open(ctx, d.JS, d.Names)
	if err != nil {
		return 0, err
	}
	if err := sc.Add(ctx, d.Config.Scope, canon); err != nil {
		return 0, err
	}
	id := fmt.Sprintf("seed:%x", xxhash.Sum64String(strings.Join(canon, "\n")))
	msgs, ids := splitter.Split(d.Names, d.Config.PartitionCount, messages.ViaSeed, "", id, links)
	if err := bus.PublishAll(ctx, d.JS, msgs, ids); err != nil {
		return 0, fmt.Errorf("publish seeds: %w", err)
	}
	return len(links), errors.Join(errs...)
}
