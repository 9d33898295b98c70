package topic

import "fmt"

// Strategies for scoring links (config --scoring).
const (
	// BreadthFirst gives every link score 0: the frontier orders by depth.
	BreadthFirst = "breadth-first"
	// BestFirst is the naive best-first crawler: a link's score is its
	// parent page's similarity to the topic.
	BestFirst = "best-first"
	// SharkSearch scores a link by what it inherits from its ancestors,
	// decaying with each irrelevant page, and by its anchor text and the text
	// around the anchor.
	SharkSearch = "sharksearch"
)

// Strategies lists the valid --scoring values.
var Strategies = []string{BreadthFirst, BestFirst, SharkSearch}

// Parent is what a link inherits from the page it was found on.
type Parent struct {
	// Relevance is the page's relevance A (Topic.Relevance).
	Relevance float64
	// Score is the page's own score when it was queued (0 for a seed or
	// when unknown); SharkSearch passes a decayed share of it on to links of
	// an irrelevant page.
	Score float64
	// DepthLeft is how many more irrelevant pages SharkSearch may cross
	// below this page; use Scorer.SeedDepth for a seed or when unknown.
	DepthLeft int
	// Seed is set for a seed page: the crawl's owner chose it, so its
	// links are followed whatever its relevance.
	Seed bool
}

// Anchor is what a link carries of its own: its anchor text and the text
// around it.
type Anchor struct {
	Text, Context string
}

// LinkScore is one link's verdict.
type LinkScore struct {
	Score     float64
	DepthLeft int
	// Follow is false when the strategy says the link is not worth a fetch.
	Follow bool
}

// Scorer scores the links of a page for the frontier's priority.
type Scorer struct {
	Topic    *Topic
	Strategy string
	// Threshold: a page is relevant when its relevance exceeds it (the
	// thesis uses 2). Best-first follows no link of an irrelevant page.
	Threshold float64
	// Decay (SharkSearch's delta) is the share of a parent's score that its
	// links inherit; Gamma weighs inherited against neighbourhood scores;
	// Beta weighs anchor against context scores; Depth bounds how many
	// irrelevant pages in a row SharkSearch crosses.
	Decay, Gamma, Beta float64
	Depth              int
}

// NewScorer checks the strategy and returns a Scorer with SharkSearch's
// usual constants (delta 0.5, gamma 0.8, beta 0.8, depth 3).
func NewScorer(t *Topic, strategy string, threshold float64) (*Scorer, error) {
	switch strategy {
	case BreadthFirst:
	case BestFirst, SharkSearch:
		if t == nil {
			return nil, fmt.Errorf("scoring %s needs a topic", strategy)
		}
	default:
		return nil, fmt.Errorf("scoring %q: want one of %v", strategy, Strategies)
	}
	return &Scorer{Topic: t, Strategy: strategy, Threshold: threshold, Decay: 0.5, Gamma: 0.8, Beta: 0.8, Depth: 3}, nil
}

// SeedDepth is the DepthLeft of a page whose own is unknown.
func (s *Scorer) SeedDepth() int { return s.Depth }

// Relevant reports whether relevance a passes the threshold.
func (s *Scorer) Relevant(a float64) bool { return a > s.Threshold }

// Score returns the verdict on each of a page's links, in order.
func (s *Scorer) Score(p Parent, links []Anchor) []LinkScore {
	out := make([]LinkScore, len(links))
	switch s.Strategy {
	case BestFirst:
		// Scores are normalised to [0, 1] so that strategies share a scale.
		follow := s.Relevant(p.Relevance) || p.Seed
		for i := range out {
			out[i] = LinkScore{Score: p.Relevance / MaxRelevance, Follow: follow}
		}
	case SharkSearch:
		s.shark(p, links, out)
	default:
		for i := range out {
			out[i] = LinkScore{Follow: true}
		}
	}
	return out
}

// shark applies SharkSearch (Hersovici et al. 1998, as given by Pant et al.):
//
//	inherited = delta * sim(parent)         if the parent is relevant
//	          = delta * score(parent)       otherwise
//	anchor    = sim(anchor text)
//	context   = 1 if anchor > 0, else sim(text around the anchor)
//	neighbour = beta * anchor + (1-beta) * context
//	score     = gamma * inherited + (1-gamma) * neighbour
//
// The depth bound: below a relevant page a link gets the full Depth; below
// an irrelevant one, one less than its parent had, and a link with none
// left is not followed.
func (s *Scorer) shark(p Parent, links []Anchor, out []LinkScore) {
	relevant := s.Relevant(p.Relevance)
	inherited, depth := s.Decay*p.Score, p.DepthLeft-1
	if p.Seed {
		depth = s.Depth
	}
	if relevant {
		inherited, depth = s.Decay*p.Relevance/MaxRelevance, s.Depth
	}
	for i, l := range links {
		anchor := s.Topic.Similarity(l.Text)
		context := 1.0
		if anchor == 0 {
			context = s.Topic.Similarity(l.Context)
		}
		neighbour := s.Beta*anchor + (1-s.Beta)*context
		out[i] = LinkScore{
			Score:     s.Gamma*inherited + (1-s.Gamma)*neighbour,
			DepthLeft: depth,
			Follow:    depth > 0,
		}
	}
}
