package parser

import (
	"slices"
	"sync"
	"testing"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/splitter"
)

// observed is an Observer that keeps what it sees, by page.
type observed struct {
	mu    sync.Mutex
	links map[string][]string
}

func (o *observed) Links(source string, links []messages.Link) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range links {
		o.links[source] = append(o.links[source], l.URL)
	}
}

// TestObserverSeesLinksBeforeRecent runs a parser with the recent-links
// cache and an observer: the observer sees every page's links to follow,
// canonical and filtered, before the cache holds the repeats back, so it
// sees the second page's links although dedup does not.
func TestObserverSeesLinksBeforeRecent(t *testing.T) {
	js, names := testbus.Start(t, 1)
	recent, err := splitter.NewRecent(100)
	if err != nil {
		t.Fatal(err)
	}
	obs := &observed{links: map[string][]string{}}
	startParser(t, js, names, func(o *Options) { o.Recent, o.Observer = recent, obs })
	body := []byte(`<a href="/x#frag">x</a> <a href="/y" rel=nofollow>y</a> <a href="http://out.test/">out</a> <a href="HTTP://A.TEST/z">z</a>`)
	publishPage(t, js, names, messages.Page{TaskID: "1", URL: "http://a.test/one"}, body)
	parserSettled(t, js, names) // the first page acked, so its links are recent
	publishPage(t, js, names, messages.Page{TaskID: "2", URL: "http://a.test/two"}, body)
	parsedDocs(t, js, names, 2)
	parserSettled(t, js, names)
	if n := discoveredLinks(t, js, names, 1<<20); n != 2 {
		t.Errorf("dedup got %d links, want 2 (the second page's held back)", n)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []string{"http://a.test/x", "http://a.test/z"}
	for _, page := range []string{"http://a.test/one", "http://a.test/two"} {
		if got := obs.links[page]; !slices.Equal(got, want) {
			t.Errorf("observed on %s: %q, want %q", page, got, want)
		}
	}
}
