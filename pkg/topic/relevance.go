package topic

import (
	"errors"
	"strings"
)

// Topic is what a focused crawl looks for: a few keywords or a short text,
// as a term vector.
type Topic struct {
	vec Vector
}

// New makes a topic from keywords or a short text. It fails when nothing is
// left once stop words are removed.
func New(text string) (*Topic, error) {
	v := NewVector(text)
	if len(v) == 0 {
		return nil, errors.New("topic: no terms (empty, or only stop words)")
	}
	return &Topic{vec: v}, nil
}

// Similarity is the cosine of text's term vector and the topic's, in [0, 1].
func (t *Topic) Similarity(text string) float64 {
	if t == nil || strings.TrimSpace(text) == "" {
		return 0
	}
	return Cosine(t.vec, NewVector(text))
}

// TitleWeight is the weight of the title's similarity in Relevance (the
// thesis's A = 4B + C).
const TitleWeight = 4

// MaxRelevance is the largest value Relevance returns.
const MaxRelevance = TitleWeight + 1

// Relevance is the thesis's page relevance A = 4*B + C, where B is the
// similarity of the title and C that of the body text. It lies in [0, 5];
// the thesis calls a page relevant when A > 2.
func (t *Topic) Relevance(title, body string) float64 {
	return TitleWeight*t.Similarity(title) + t.Similarity(body)
}
