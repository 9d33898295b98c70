package config

import (
	"strings"

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
