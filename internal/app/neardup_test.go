package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// run --near-duplicates --out: of two pages with the same article but for a
// date, one names the other in near_duplicate_of; a different page, and
// every page of a crawl without the flag, has neither field.
func TestRunMarksNearDuplicates(t *testing.T) {
	article := strings.Repeat("The harbour master logged every boat that came in before the storm, and the ferry waited. ", 40)
	other := strings.Repeat("Seven kinds of apple grow in the valley orchard, picked from August until the first frost. ", 40)
	site := testsite.New()
	h := site.AddHost(t, "news.test", "127.0.0.1")
	page := func(text string, links ...string) testsite.Page {
		var b strings.Builder
		b.WriteString("<html><body><nav><a href=\"/\">home</a></nav><article><p>" + text + "</p></article>")
		for _, l := range links {
			b.WriteString(`<a href="` + l + `">more</a>`)
		}
		b.WriteString("</body></html>")
		return testsite.Page{Body: b.String()}
	}
	h.Set("/", page("Front page of the news site with today's stories and more to read.", "/story", "/story?print=1", "/apples"))
	h.Set("/story", page("Posted 2026-11-26. "+article))
	h.Set("/story?print=1", page("Printed 2026-11-27. "+article))
	h.Set("/apples", page(other))

	crawl := func(on bool) map[string]messages.Parsed {
		cfg := testConfig(t, []string{h.URL("/")})
		cfg.NearDuplicates = on
		cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
			t.Fatalf("RunAll: %v", err)
		}
		docs := readParsed(t, cfg.Out, h.Base)
		if len(docs) != 4 {
			t.Fatalf("%d documents, want 4: %v", len(docs), docs)
		}
		return docs
	}

	docs := crawl(true)
	a, b := docs["/story"], docs["/story?print=1"]
	switch {
	case a.NearDuplicateOf == h.URL("/story?print=1") && b.NearDuplicateOf == "":
	case b.NearDuplicateOf == h.URL("/story") && a.NearDuplicateOf == "":
	default:
		t.Errorf("the two stories: near_duplicate_of %q and %q; want one naming the other", a.NearDuplicateOf, b.NearDuplicateOf)
	}
	if d := docs["/apples"]; d.NearDuplicateOf != "" || len(d.SimHash) != 16 {
		t.Errorf("/apples: near_duplicate_of %q, simhash %q; want none and a fingerprint", d.NearDuplicateOf, d.SimHash)
	}
	for path, d := range crawl(false) {
		if d.SimHash != "" || d.NearDuplicateOf != "" {
			t.Errorf("without --near-duplicates, %s has simhash %q, near_duplicate_of %q", path, d.SimHash, d.NearDuplicateOf)
		}
	}
}
