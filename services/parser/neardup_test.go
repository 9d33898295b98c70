package parser

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/simhash"
)

// prose returns n words of pseudo-text from seed: different seeds give
// unrelated pages.
func prose(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 9))
	w := make([]string, n)
	for i := range w {
		b := make([]byte, 3+r.IntN(6))
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		w[i] = string(b)
	}
	return w
}

func htmlPage(words []string, links ...string) string {
	var b strings.Builder
	b.WriteString("<html><head><title>t</title></head><body><nav><a href=/>home</a> <a href=/about>about us</a></nav><p>")
	b.WriteString(strings.Join(words, " "))
	b.WriteString("</p>")
	for _, l := range links {
		fmt.Fprintf(&b, `<a href="%s">%s</a>`, l, l)
	}
	b.WriteString("</body></html>")
	return b.String()
}

func parseAt(t *testing.T, s *Service, rawURL, host, body string) (messages.Parsed, []messages.Link) {
	t.Helper()
	page := messages.Page{URL: rawURL, Host: host, Status: 200, ContentType: "text/html"}
	doc, follow, err := s.parse(context.Background(), page, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc, follow
}

func nearDuplicatesOn(skip bool) func(*Options) {
	return func(o *Options) {
		o.Scope = hostScope{"a.test": true, "b.test": true}
		o.NearDuplicates = &NearDuplicates{Distance: simhash.DefaultDistance, PerHost: 100, Hosts: 10, SkipLinks: skip}
	}
}

func TestParseMarksNearDuplicates(t *testing.T) {
	s := newTestService(t, nearDuplicatesOn(false))
	original := prose(1, 400)
	edited := append([]string(nil), original...)
	edited[100], edited[250] = "2026", "counter9" // a date and a counter changed

	doc, _ := parseAt(t, s, "http://a.test/original", "a.test", htmlPage(original))
	if doc.NearDuplicateOf != "" || len(doc.SimHash) != 16 {
		t.Fatalf("first page: near_duplicate_of %q, simhash %q; want none and 16 hex digits", doc.NearDuplicateOf, doc.SimHash)
	}
	doc, follow := parseAt(t, s, "http://a.test/copy?session=1", "a.test", htmlPage(edited, "/next"))
	if doc.NearDuplicateOf != "http://a.test/original" {
		t.Errorf("edited copy: near_duplicate_of %q, want the original", doc.NearDuplicateOf)
	}
	if len(follow) == 0 {
		t.Error("a near-duplicate's links are followed unless --near-duplicate-skip-links")
	}
	// A second copy names the original too: near-duplicates are not
	// remembered, so a cluster does not drift.
	if doc, _ := parseAt(t, s, "http://a.test/copy?session=2", "a.test", htmlPage(edited)); doc.NearDuplicateOf != "http://a.test/original" {
		t.Errorf("second copy: near_duplicate_of %q, want the original", doc.NearDuplicateOf)
	}
	// A different page of the same site is not one, though it shares the
	// navigation.
	if doc, _ := parseAt(t, s, "http://a.test/other", "a.test", htmlPage(prose(2, 400))); doc.NearDuplicateOf != "" {
		t.Errorf("unrelated page: near_duplicate_of %q", doc.NearDuplicateOf)
	}
	// The same text on another host: per host, not a near-duplicate.
	if doc, _ := parseAt(t, s, "http://b.test/mirror", "b.test", htmlPage(original)); doc.NearDuplicateOf != "" {
		t.Errorf("other host: near_duplicate_of %q", doc.NearDuplicateOf)
	}
	// A redelivered page finds itself: not its own near-duplicate.
	if doc, _ := parseAt(t, s, "http://a.test/original", "a.test", htmlPage(original)); doc.NearDuplicateOf != "" {
		t.Errorf("redelivered original: near_duplicate_of %q", doc.NearDuplicateOf)
	}
	if n := s.Stats.NearDuplicates.Load(); n != 2 {
		t.Errorf("pages_near_duplicate_total %d, want 2", n)
	}
	// A page without words has no fingerprint.
	if doc, _ := parseAt(t, s, "http://a.test/empty", "a.test", "<html><body><img src=x.png></body></html>"); doc.SimHash != "" || doc.NearDuplicateOf != "" {
		t.Errorf("empty page: simhash %q, near_duplicate_of %q", doc.SimHash, doc.NearDuplicateOf)
	}
}

func TestParseSkipsNearDuplicateLinks(t *testing.T) {
	s := newTestService(t, nearDuplicatesOn(true))
	text := prose(3, 300)
	parseAt(t, s, "http://a.test/cal/2026-01", "a.test", htmlPage(text, "/cal/2026-02"))
	doc, follow := parseAt(t, s, "http://a.test/cal/2026-02", "a.test", htmlPage(text, "/cal/2026-03"))
	if doc.NearDuplicateOf == "" || len(follow) != 0 {
		t.Fatalf("near_duplicate_of %q, %d links followed; want a near-duplicate and none", doc.NearDuplicateOf, len(follow))
	}
	if len(doc.Outlinks) == 0 {
		t.Error("the document still lists the outlinks")
	}
	if s.Stats.NearDuplicateLinks.Load() == 0 {
		t.Error("links_near_duplicate_total not counted")
	}
}

func TestParseNearDuplicatesOff(t *testing.T) {
	s := newTestService(t)
	doc, _ := parseAt(t, s, "http://a.test/", "a.test", htmlPage(prose(1, 50)))
	if doc.SimHash != "" || doc.NearDuplicateOf != "" {
		t.Errorf("off: simhash %q, near_duplicate_of %q", doc.SimHash, doc.NearDuplicateOf)
	}
}

// The hosts' indexes are bounded: the least recently parsed host is
// forgotten first.
func TestNearDupsForgetsTheLeastRecentHost(t *testing.T) {
	n, err := newNearDups(NearDuplicates{Distance: 3, PerHost: 10, Hosts: 2})
	if err != nil {
		t.Fatal(err)
	}
	n.check("a", "http://a/1", 0xff)
	n.check("b", "http://b/1", 0xff)
	n.check("a", "http://a/2", 0xf0f0) // a is now the most recent
	n.check("c", "http://c/1", 0xff)   // evicts b
	if of := n.check("a", "http://a/3", 0xff); of != "http://a/1" {
		t.Errorf("a kept: got %q, want http://a/1", of)
	}
	if of := n.check("b", "http://b/2", 0xff); of != "" {
		t.Errorf("b was forgotten, yet %q", of)
	}
	if len(n.hosts) != 2 || n.lru.Len() != 2 {
		t.Errorf("%d hosts held, want 2", len(n.hosts))
	}
}

func TestNewRefusesBadNearDuplicates(t *testing.T) {
	for _, nd := range []NearDuplicates{{Distance: 16, PerHost: 1, Hosts: 1}, {Distance: 3, PerHost: 0, Hosts: 1}} {
		if _, err := New(Options{NearDuplicates: &nd}); err == nil || !strings.Contains(err.Error(), "--near-duplicate-") {
			t.Errorf("%+v: err %v, want one naming the flag", nd, err)
		}
	}
}

// The fingerprint's cost beside extraction, on the same page.
func BenchmarkParseNearDuplicates(b *testing.B) {
	body := []byte(htmlPage(prose(5, 2500))) // ~17 KB
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("on=%v", on), func(b *testing.B) {
			o := Options{Scope: hostScope{"a.test": true}, MaxDepth: -1, Kinds: DefaultKinds}
			if on {
				o.NearDuplicates = &NearDuplicates{Distance: simhash.DefaultDistance, PerHost: DefaultNearDuplicatePerHost, Hosts: DefaultNearDuplicateHosts}
			}
			s, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			i := 0
			for b.Loop() {
				i++
				page := messages.Page{URL: fmt.Sprintf("http://a.test/%d", i), Host: "a.test", Status: 200, ContentType: "text/html"}
				if _, _, err := s.parse(context.Background(), page, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The parser's workers share the index: concurrent checks on hosts that are
// evicted and come back stay consistent (run with -race).
func TestNearDupsConcurrent(t *testing.T) {
	n, err := newNearDups(NearDuplicates{Distance: simhash.DefaultDistance, PerHost: 50, Hosts: 2})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				host := fmt.Sprintf("h%d", (w+i)%3)
				fp := uint64(i%7) * 0x0101010101010101
				if of := n.check(host, fmt.Sprintf("http://%s/%d", host, i), fp); of != "" && !strings.HasPrefix(of, "http://"+host+"/") {
					t.Errorf("%s's page named %s, another host's", host, of)
				}
			}
		}()
	}
	wg.Wait()
	if len(n.hosts) > 2 || n.lru.Len() != len(n.hosts) {
		t.Errorf("%d hosts in the map, %d in the list; want at most 2, equal", len(n.hosts), n.lru.Len())
	}
}
