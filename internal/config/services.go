package config

import (
	"fmt"
	"strings"

	"github.com/trawlerhq/trawler/pkg/revisit"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/topic"
	"github.com/trawlerhq/trawler/pkg/urlx"
	"github.com/trawlerhq/trawler/services/parser"
)

// ParserOptions sets the parsing settings of o from the crawl's settings:
// link kinds, canonical rules, link limits, allow and deny patterns, topic
// and scoring. The parser knows nothing of flags: this is where they meet.
func (cfg *Config) ParserOptions(o *parser.Options) error {
	var err error
	o.Text = cfg.ParsedText
	o.NearDuplicates = nil
	if cfg.NearDuplicates {
		o.NearDuplicates = &parser.NearDuplicates{
			Distance: cfg.NearDuplicateDistance, PerHost: cfg.NearDuplicateWindow,
			Hosts: parser.DefaultNearDuplicateHosts, SkipLinks: cfg.NearDuplicateSkipLinks,
		}
		if err := o.NearDuplicates.Validate(); err != nil {
			return err
		}
	}
	o.MaxURLLength = cfg.MaxURLLength
	o.MaxPathDepth, o.MaxRepeatedSegments, o.MaxQueryParams = cfg.MaxPathDepth, cfg.MaxRepeatedSegments, cfg.MaxQueryParams
	o.Kinds = parser.DefaultKinds
	if len(cfg.LinkKinds) > 0 {
		if o.Kinds, err = parser.ParseKinds(cfg.LinkKinds); err != nil {
			return err
		}
	}
	o.Rules = urlx.Rules{SortQuery: cfg.SortQuery}
	for _, p := range cfg.DropParams {
		if strings.EqualFold(p, "tracking") {
			o.Rules.DropParams = append(o.Rules.DropParams, urlx.TrackingParams...)
			o.Rules.DropSessionSegments = true
		} else {
			o.Rules.DropParams = append(o.Rules.DropParams, p)
		}
	}
	if o.Filter, err = scope.NewFilter(cfg.Allow, cfg.Deny, 0); err != nil {
		return err
	}
	var tp *topic.Topic
	if strings.TrimSpace(cfg.Topic) != "" {
		if tp, err = topic.New(cfg.Topic); err != nil {
			return err
		}
	}
	strategy := cfg.Scoring
	if strategy == "" {
		strategy = topic.BreadthFirst
	}
	o.Scorer, err = topic.NewScorer(tp, strategy, cfg.RelevanceThreshold)
	return err
}

// DefaultMaxPagesPerHost is --max-pages-per-host's default.
const DefaultMaxPagesPerHost = 100000

// DefaultFetchBacklog is --fetch-backlog's default: about two seconds of a
// parser's work on two cores, ~20 MB of pages, so that the parser never
// waits for a fetch and the stream's blocks are still in its write cache
// when they are read.
const DefaultFetchBacklog = 1000

// Continuous tells whether the crawl revisits what it fetched.
func (cfg *Config) Continuous() bool { return cfg.RevisitMin != 0 || cfg.RevisitMax != 0 }

// RevisitSchedule is the frontier's revisit rule from --revisit-min and
// --revisit-max: nil when both are 0 (no revisits), an error naming the
// flag when one is missing or they do not make a range.
func (cfg *Config) RevisitSchedule() (*revisit.Schedule, error) {
	if !cfg.Continuous() {
		return nil, nil
	}
	if cfg.RevisitMin <= 0 || cfg.RevisitMax <= 0 {
		return nil, fmt.Errorf("--revisit-min %v, --revisit-max %v: a continuous crawl needs both, positive (e.g. --revisit-min 1h --revisit-max 720h)", cfg.RevisitMin, cfg.RevisitMax)
	}
	s, err := revisit.NewSchedule(cfg.RevisitMin, cfg.RevisitMax)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// HostBudget is the store's per-host budget: none in a continuous crawl,
// where every visit of a host's pages would spend it.
func (cfg *Config) HostBudget() int {
	if cfg.Continuous() {
		return 0
	}
	return cfg.MaxPagesPerHost
}
