package subjects

import (
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
)

func TestKind(t *testing.T) {
	n, err := New("crawl.eu")
	if err != nil {
		t.Fatal(err)
	}
	for subject, want := range map[string]string{
		n.Discovered(7):          messages.KindDiscovered,
		n.FrontierNew(0):         messages.KindNew,
		n.FrontierDone(255):      messages.KindDone,
		n.Ended(12):              messages.KindDone,
		"crawl.eu.ended.x":       "",
		n.Fetch(3):               messages.KindTask,
		n.PagesFetched():         messages.KindPage,
		n.PagesParsed():          messages.KindParsed,
		n.DeadLetter("parser"):   messages.KindDeadLetter,
		n.Frontier(3):            "", // a filter, not a subject
		"crawl.eu.discovered.x":  "",
		"crawl.eu.discovered.-1": "",
		"crawl.eu.fetch.1.2":     "",
		"crawl.eu.dlq.*":         "",
		"crawl.eu.pages":         "",
		"trawler.pages.parsed":   "", // another crawl's
		"crawl.eu":               "",
		"":                       "",
	} {
		if got := n.Kind(subject); got != want {
			t.Errorf("Kind(%q) = %q, want %q", subject, got, want)
		}
	}
	// every kind has a subject
	seen := map[string]bool{}
	for _, s := range []string{n.Discovered(0), n.FrontierNew(0), n.FrontierDone(0), n.Fetch(0), n.PagesFetched(), n.PagesParsed(), n.DeadLetter("x")} {
		seen[n.Kind(s)] = true
	}
	for _, k := range messages.Kinds {
		if !seen[k] {
			t.Errorf("no subject carries kind %s", k)
		}
	}
}
