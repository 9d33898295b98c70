package parser

import (
	"strings"

	"github.com/trawlerhq/trawler/pkg/config"
	"github.com/trawlerhq/trawler/pkg/scope"
	"github.com/trawlerhq/trawler/pkg/topic"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

// Configure sets the parsing settings of o from a crawl's settings: link
// kinds, canonical rules, link limits, allow and deny patterns, topic and
// scoring.
func (o *Options) Configure(cfg config.Config) error {
	var err error
	o.Text = cfg.ParsedText
	o.MaxURLLength = cfg.MaxURLLength
	o.MaxPathDepth, o.MaxRepeatedSegments, o.MaxQueryParams = cfg.MaxPathDepth, cfg.MaxRepeatedSegments, cfg.MaxQueryParams
	o.Kinds = DefaultKinds
	if len(cfg.LinkKinds) > 0 {
		if o.Kinds, err = ParseKinds(cfg.LinkKinds); err != nil {
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
