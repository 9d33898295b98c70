package splitter

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trawlerhq/trawler/internal/linkstream"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

func TestSplitOneMessagePerPartition(t *testing.T) {
	names, _ := subjects.New("t")
	links := []messages.Link{
		{URL: "http://a.example/1"}, {URL: "http://a.example/2"}, {URL: "http://b.example/1"}, {URL: "not a url"},
	}
	msgs, ids := Split(names, 16, messages.ViaLink, "http://src.example/", "links:x", links)
	total := 0
	seen := map[string]bool{}
	for i, m := range msgs {
		var d messages.Discovered
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Fatal(err)
		}
		if m.Subject != names.Discovered(d.Partition) || ids[i] != fmt.Sprintf("links:x:%d", d.Partition) || seen[m.Subject] {
			t.Errorf("message %d: subject %s id %s partition %d", i, m.Subject, ids[i], d.Partition)
		}
		seen[m.Subject] = true
		for _, l := range d.Links {
			h, _ := urlx.Host(l.URL)
			if urlx.Partition(h, 16) != d.Partition {
				t.Errorf("%s in partition %d", l.URL, d.Partition)
			}
			total++
		}
	}
	if total != 3 {
		t.Errorf("%d links split, want 3 (the invalid one dropped)", total)
	}
}

func TestRecentHoldsBackOnlyCommittedLinks(t *testing.T) {
	r, err := NewRecent(100)
	if err != nil {
		t.Fatal(err)
	}
	a := []messages.Link{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}}
	if got := r.Filter(a); len(got) != 2 {
		t.Fatalf("fresh links filtered: %v", got)
	}
	// Not committed (the publish failed): sent again in full.
	if got := r.Filter(a); len(got) != 2 {
		t.Fatalf("uncommitted links held back: %v", got)
	}
	r.Commit(a)
	if got := r.Filter(append(a, messages.Link{URL: "http://a.example/3"})); len(got) != 1 || got[0].URL != "http://a.example/3" {
		t.Fatalf("after commit: %v", got)
	}
	var nilRecent *Recent
	if got := nilRecent.Filter(a); len(got) != 2 {
		t.Fatal("a nil Recent must pass everything")
	}
}

// BenchmarkRecentSavings reports the share of links a parser holds back with
// the paper's cache in front of the host splitter, on a link stream with the
// paper's locality, per cache size.
func BenchmarkRecentSavings(b *testing.B) {
	for _, size := range []int{1000, 10_000, 50_000, 500_000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ls := linkstream.New(linkstream.Options{Seed: 3})
				r, _ := NewRecent(size)
				total := 0
				for p := 0; p < 20_000; p++ {
					_, urls := ls.NextPage()
					links := make([]messages.Link, len(urls))
					for j, u := range urls {
						links[j] = messages.Link{URL: u}
					}
					total += len(links)
					// Within a page the splitter already merges repeats
					// into one message; count what crosses partitions.
					kept := r.Filter(dedupe(links))
					r.Commit(kept)
				}
				b.ReportMetric(100*float64(r.Dropped.Load())/float64(total), "held-back%")
				b.ReportMetric(100*float64(r.Sent.Load())/float64(total), "sent%")
			}
		})
	}
}

func dedupe(links []messages.Link) []messages.Link {
	seen := map[string]bool{}
	out := links[:0:0]
	for _, l := range links {
		if !seen[l.URL] {
			seen[l.URL] = true
			out = append(out, l)
		}
	}
	return out
}
