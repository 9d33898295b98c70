package topic

import (
	"math"
	"slices"
	"testing"
)

func TestTermsStopWordsAndStems(t *testing.T) {
	got := Terms("The Crawlers are crawling the WEB; crawled pages, and a 42-page test!")
	want := []string{"crawler", "crawl", "web", "crawl", "page", "42", "page", "test"}
	if !slices.Equal(got, want) {
		t.Errorf("Terms = %q, want %q", got, want)
	}
	if got := Terms("Ünïcode Wörter straße"); len(got) != 3 {
		t.Errorf("non-ASCII words: %q", got)
	}
	if got := Terms(string([]byte{0xff, 'a', 'b', 0xfe})); !slices.Equal(got, []string{"ab"}) {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

func TestCosine(t *testing.T) {
	a := NewVector("jaguar car engine")
	if c := Cosine(a, a); math.Abs(c-1) > 1e-12 {
		t.Errorf("cos(a, a) = %v", c)
	}
	if c := Cosine(a, NewVector("tropical rainforest birds")); c != 0 {
		t.Errorf("disjoint: %v", c)
	}
	if c := Cosine(a, Vector{}); c != 0 {
		t.Errorf("empty: %v", c)
	}
	// jaguar car engine . jaguar cat = 1; |a| = sqrt3, |b| = sqrt2.
	if c, want := Cosine(a, NewVector("jaguar cat")), 1/math.Sqrt(6); math.Abs(c-want) > 1e-12 {
		t.Errorf("cos = %v, want %v", c, want)
	}
}

func TestRelevanceIsFourTitlePlusBody(t *testing.T) {
	tp, err := New("sailing boats")
	if err != nil {
		t.Fatal(err)
	}
	title, body := "Sailing boats for beginners", "Boats, knots and the weather. Sailing is fun."
	want := 4*tp.Similarity(title) + tp.Similarity(body)
	if got := tp.Relevance(title, body); math.Abs(got-want) > 1e-12 || got <= 2 {
		t.Errorf("Relevance = %v, want %v (> 2)", got, want)
	}
	if got := tp.Relevance("Cooking pasta", "Boil water, add salt."); got != 0 {
		t.Errorf("off-topic relevance = %v", got)
	}
	if _, err := New("the and of"); err == nil {
		t.Error("a topic of stop words was accepted")
	}
}

func TestStrategies(t *testing.T) {
	tp, _ := New("sailing boats")
	links := []Anchor{{Text: "sailing lessons"}, {Text: "more", Context: "all about boats and the sea"}, {Text: "pasta"}}
	if _, err := NewScorer(nil, BestFirst, 2); err == nil {
		t.Error("best-first without a topic accepted")
	}
	if _, err := NewScorer(tp, "depth-first", 2); err == nil {
		t.Error("unknown strategy accepted")
	}

	bfs, _ := NewScorer(nil, BreadthFirst, 2)
	for _, s := range bfs.Score(Parent{}, links) {
		if s.Score != 0 || !s.Follow {
			t.Errorf("breadth-first: %+v", s)
		}
	}

	best, _ := NewScorer(tp, BestFirst, 2)
	for _, s := range best.Score(Parent{Relevance: 3}, links) {
		if s.Score != 3.0/MaxRelevance || !s.Follow {
			t.Errorf("best-first, relevant parent: %+v", s)
		}
	}
	for _, s := range best.Score(Parent{Relevance: 1}, links) {
		if s.Follow {
			t.Errorf("best-first followed a link of an irrelevant page: %+v", s)
		}
	}
	for _, s := range best.Score(Parent{Relevance: 1, Seed: true}, links) {
		if !s.Follow {
			t.Errorf("best-first did not follow a link of an irrelevant seed: %+v", s)
		}
	}

	shark, _ := NewScorer(tp, SharkSearch, 2)
	got := shark.Score(Parent{Relevance: 3, DepthLeft: 1}, links)
	if !(got[0].Score > got[1].Score && got[1].Score > got[2].Score) {
		t.Errorf("SharkSearch: want anchor match > context match > neither, got %+v", got)
	}
	if got[0].DepthLeft != shark.Depth || !got[0].Follow {
		t.Errorf("below a relevant page the depth bound resets: %+v", got[0])
	}
	// Below irrelevant pages the inherited score decays and depth runs out.
	p := Parent{Relevance: 0, Score: got[2].Score, DepthLeft: got[2].DepthLeft}
	for i := 0; i < shark.Depth; i++ {
		s := shark.Score(p, links[2:])[0]
		if s.Score >= p.Score && p.Score > 0 {
			t.Errorf("step %d: score %v did not decay from %v", i, s.Score, p.Score)
		}
		if want := i < shark.Depth-1; s.Follow != want {
			t.Errorf("step %d: follow %v, want %v (depth left %d)", i, s.Follow, want, s.DepthLeft)
		}
		p = Parent{Score: s.Score, DepthLeft: s.DepthLeft}
	}
}

func BenchmarkRelevance(b *testing.B) {
	tp, _ := New("sailing boats yacht regatta")
	body := ""
	for i := 0; i < 400; i++ {
		body += "the crew trimmed the sails of their yacht before the regatta started in heavy weather "
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		tp.Relevance("Regatta report", body)
	}
}
