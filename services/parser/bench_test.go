package parser

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/trawlerhq/trawler/pkg/topic"
)

// realisticPage builds a page shaped like those of news and shop sites: a
// head with metadata, stylesheets and inline script, navigation lists,
// paragraphs, a table, images with srcset, and links (relative, absolute,
// with queries and fragments, some repeated, a few javascript:) until it
// holds about links links and size bytes.
func realisticPage(rng *rand.Rand, size, links int) []byte {
	words := strings.Fields(`the crawler fetched pages from servers around world and parsed their links while
		sailing boats harbour weather market prices report city council election football season recipe
		garden music festival review science research university library history museum travel guide`)
	text := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.Intn(len(words))])
		}
		return b.String()
	}
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>` + text(8) + `</title>`)
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="description" content="` + text(25) + `">`)
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&b, `<link rel="stylesheet" href="/static/css/c%d.css?v=%d">`, i, rng.Intn(1e6))
	}
	b.WriteString(`<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}` + strings.Repeat(`var x=document.getElementById("a");if(x){x.innerHTML='<a href="/not">';}`, 20) + `</script>`)
	b.WriteString(`<style>` + strings.Repeat(`.nav a{color:#333;padding:4px 8px}.card{margin:0 auto;max-width:960px}`, 20) + `</style></head><body>`)
	b.WriteString(`<header class="site-header"><nav><ul class="menu">`)
	link := func(i int) string {
		switch i % 7 {
		case 0:
			return fmt.Sprintf("/section/%d/article-%d.html", i%5, rng.Intn(1e5))
		case 1:
			return fmt.Sprintf("https://www.example.com/news/%d?ref=nav&amp;id=%d", i, rng.Intn(1e4))
		case 2:
			return fmt.Sprintf("../category/item-%d#reviews", rng.Intn(1e4))
		case 3:
			return fmt.Sprintf("//cdn.example.net/page/%d", i)
		case 4:
			return "javascript:void(0)"
		case 5:
			return fmt.Sprintf("tag/%s-%d/", words[rng.Intn(len(words))], i)
		}
		return fmt.Sprintf("http://other-site-%d.org/path/to/%d", i%9, i)
	}
	n := 0
	for ; n < links/4; n++ {
		fmt.Fprintf(&b, `<li class="menu-item"><a href="%s" class="nav-link">%s</a></li>`, link(n), text(2))
	}
	b.WriteString(`</ul></nav></header><main><article>`)
	perPara := max(1, (links-n)/12)
	for b.Len() < size-2000 {
		fmt.Fprintf(&b, `<h2 class="title">%s</h2><div class="row"><div class="col"><p>`, text(6))
		for j := 0; j < 8; j++ {
			b.WriteString(text(12 + rng.Intn(20)))
			if j < perPara && n < links {
				fmt.Fprintf(&b, ` <a href="%s" title="%s">%s</a> `, link(n), text(3), text(3))
				n++
			}
			b.WriteString(". ")
		}
		b.WriteString(`</p></div>`)
		if rng.Intn(3) == 0 {
			fmt.Fprintf(&b, `<img src="/img/%d.jpg" srcset="/img/%d-2x.jpg 2x" alt="%s" width="640" height="480">`, n, n, text(4))
		}
		if rng.Intn(4) == 0 {
			b.WriteString(`<table class="data"><tr><th>Item</th><th>Price</th></tr>`)
			for r := 0; r < 5; r++ {
				fmt.Fprintf(&b, `<tr><td>%s</td><td>%d.%02d</td></tr>`, text(2), rng.Intn(100), rng.Intn(100))
			}
			b.WriteString(`</table>`)
		}
		b.WriteString(`</div>`)
	}
	b.WriteString(`</article></main><footer><ul>`)
	for ; n < links; n++ {
		fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, link(n), text(2))
	}
	b.WriteString(`</ul><p>&copy; 2026 Example Media &amp; Co.</p></footer><script src="/static/app.js" defer></script></body></html>`)
	return b.Bytes()
}

// benchPages is a fixed set of pages from 20 to 100 KB with about 60 links.
func benchPages() (pages [][]byte, total int) {
	rng := rand.New(rand.NewSource(42))
	for i := 0; i < 40; i++ {
		p := realisticPage(rng, 20<<10+rng.Intn(80<<10), 50+rng.Intn(21))
		pages = append(pages, p)
		total += len(p)
	}
	return pages, total
}

// cpuTime is the process's user and system CPU time: on a shared machine
// wall time also counts the waits for a core, CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs parse over the pages until b is done and reports pages and
// MB per wall second and per CPU second (GC included).
func measure(b *testing.B, parse func([]byte)) {
	pages, total := benchPages()
	runtime.GC()
	n, cpu0 := 0, cpuTime()
	for b.Loop() {
		for _, p := range pages {
			parse(p)
		}
		n++
	}
	wall, cpu := b.Elapsed().Seconds(), (cpuTime() - cpu0).Seconds()
	b.ReportMetric(float64(n*len(pages))/wall, "pages/s")
	b.ReportMetric(float64(n*total)/wall/1e6, "MB/s")
	b.ReportMetric(float64(n*len(pages))/cpu, "pages/cpu-s")
	b.ReportMetric(float64(n*total)/cpu/1e6, "MB/cpu-s")
	b.ReportMetric(0, "ns/op") // one op is 40 pages: misleading
}

// The benchmarks run on one goroutine: their pages/s and MB/s are per core.
// Compare Extract (decoding, links resolved and canonicalized, text,
// anchors and, for SharkSearch, contexts) with the DOM baseline, html.Parse
// alone (nothing extracted).
func BenchmarkExtract(b *testing.B) {
	for _, c := range []struct {
		name      string
		noContext bool
	}{{"contexts", false}, {"no-contexts", true}} {
		b.Run(c.name, func(b *testing.B) {
			measure(b, func(p []byte) {
				page := Page{URL: "http://www.example.com/section/1/index.html", Body: p, ContentType: "text/html", NoLinkContext: c.noContext}
				if _, err := Extract(page, DefaultKinds); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkDOMParseBaseline(b *testing.B) {
	measure(b, func(p []byte) {
		if _, err := html.Parse(bytes.NewReader(p)); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkTokenizerOnly is the floor: the tokenizer both paths share.
func BenchmarkTokenizerOnly(b *testing.B) {
	measure(b, func(p []byte) {
		z := html.NewTokenizer(bytes.NewReader(p))
		for z.Next() != html.ErrorToken {
		}
	})
}

// BenchmarkExtractAndScore adds what a topical crawl costs on top:
// relevance of title and text, and SharkSearch scores of every link.
func BenchmarkExtractAndScore(b *testing.B) {
	tp, _ := topic.New("sailing boats harbour weather")
	sc, _ := topic.NewScorer(tp, topic.SharkSearch, 2)
	measure(b, func(p []byte) {
		ex, _ := Extract(Page{URL: "http://www.example.com/section/1/index.html", Body: p, ContentType: "text/html"}, DefaultKinds)
		a := tp.Relevance(ex.Title, ex.Text)
		anchors := make([]topic.Anchor, len(ex.Links))
		for i, l := range ex.Links {
			anchors[i] = topic.Anchor{Text: l.Anchor, Context: l.Context}
		}
		sc.Score(topic.Parent{Relevance: a, DepthLeft: 3}, anchors)
	})
}

func TestBenchPagesAreRealistic(t *testing.T) {
	pages, total := benchPages()
	links := 0
	for _, p := range pages {
		if len(p) < 20<<10 || len(p) > 110<<10 {
			t.Errorf("page of %d bytes", len(p))
		}
		ex, _ := Extract(Page{URL: "http://www.example.com/section/1/index.html", Body: p}, DefaultKinds)
		links += len(ex.Links)
	}
	mean := links / len(pages)
	t.Logf("%d pages, mean %d KB, mean %d distinct links", len(pages), total/len(pages)>>10, mean)
	if mean < 40 || mean > 80 {
		t.Errorf("mean %d links per page, want about 60", mean)
	}
}
