package urlx

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// The link mix: the hrefs of typical pages in every form pages use, resolved
// against their page's URL, with what the parser does per link. It is what
// BenchmarkCanonicalizeMix measures and what the differential tests feed
// the fast path.

// mixPage is one page of the mix: its URL and its hrefs.
type mixPage struct {
	url   string
	hrefs []string
}

// mixBases are page URLs as the fetcher hands them to the parser.
var mixBases = []string{
	"https://www.example.com/",
	"https://www.example.com/news/2024/03/some-article-title.html",
	"https://blog.example.org/posts/how-to-do-things/",
	"http://shop.example.net/category/shoes?page=2&sort=price",
	"https://en.wikipedia.org/wiki/Web_crawler",
	"https://docs.example.io/v2/guide/install/index.html",
	"https://forum.example.com/t/some-topic/12345?page=3",
	"https://www.example.co.uk/about-us",
}

var mixWords = []string{
	"about", "news", "products", "item", "contact", "blog", "2024", "category", "search", "help",
	"index.html", "page-2", "img", "static", "user", "wiki", "docs", "api", "v1", "en", "tag",
	"some-longer-slug-of-an-article", "Main_Page", "faq", "login", "cart",
}

var mixHosts = []string{
	"www.example.com", "cdn.example.net", "twitter.com", "www.facebook.com", "github.com",
	"static.example-cdn.com", "en.wikipedia.org", "accounts.google.com", "t.co", "www.youtube.com",
}

// hrefForm is one form of href and its share of a page's links, in
// thousandths.
type hrefForm struct {
	per1000 int
	gen     func(r *rand.Rand, base *url.URL) string
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func mixPath(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte('/')
		b.WriteString(pick(r, mixWords))
	}
	return b.String()
}

func mixQuery(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("?id=%d", r.IntN(100000))
	case 1:
		return fmt.Sprintf("?page=%d&sort=%s", r.IntN(20), pick(r, mixWords))
	case 2:
		return "?q=" + pick(r, mixWords) + "+" + pick(r, mixWords) + "&lang=en"
	default:
		return fmt.Sprintf("?utm_source=newsletter&utm_medium=email&ref=%d", r.IntN(1000))
	}
}

// hrefForms: shares after the HTTP Archive's link counts and a look at a
// few hundred pages: mostly host-relative and same-site absolute links,
// some relative ones, fragments, other sites, a few of everything else.
var hrefForms = []hrefForm{
	{300, func(r *rand.Rand, _ *url.URL) string { return mixPath(r, 1+r.IntN(3)) }},                                // /a/b
	{40, func(r *rand.Rand, _ *url.URL) string { return mixPath(r, 1+r.IntN(2)) + "/" }},                           // /a/
	{60, func(r *rand.Rand, _ *url.URL) string { return mixPath(r, 1+r.IntN(2)) + mixQuery(r) }},                   // /a?q
	{30, func(r *rand.Rand, _ *url.URL) string { return mixPath(r, 1+r.IntN(2)) + "#" + pick(r, mixWords) }},       // /a#f
	{120, func(r *rand.Rand, b *url.URL) string { return b.Scheme + "://" + b.Host + mixPath(r, 1+r.IntN(3)) }},    // same site
	{30, func(r *rand.Rand, b *url.URL) string { return b.Scheme + "://" + b.Host + mixPath(r, 1) + mixQuery(r) }}, // same site ?q
	{90, func(r *rand.Rand, _ *url.URL) string { // other sites
		return pick(r, []string{"http", "https"}) + "://" + pick(r, mixHosts) + mixPath(r, r.IntN(3))
	}},
	{20, func(r *rand.Rand, _ *url.URL) string { return "https://" + pick(r, mixHosts) + "/" }},
	{20, func(r *rand.Rand, _ *url.URL) string {
		return "https://" + pick(r, mixHosts) + mixPath(r, 1) + mixQuery(r) + "#x"
	}},
	{40, func(r *rand.Rand, _ *url.URL) string { return "//" + pick(r, mixHosts) + mixPath(r, 1+r.IntN(2)) }}, // scheme-relative
	{60, func(r *rand.Rand, _ *url.URL) string { return strings.TrimPrefix(mixPath(r, 1+r.IntN(2)), "/") }},   // bare names
	{15, func(r *rand.Rand, _ *url.URL) string { return pick(r, mixWords) + mixQuery(r) }},
	{30, func(r *rand.Rand, _ *url.URL) string { return "../" + strings.TrimPrefix(mixPath(r, 1+r.IntN(2)), "/") }},
	{10, func(r *rand.Rand, _ *url.URL) string { return "../../" + pick(r, mixWords) }},
	{25, func(r *rand.Rand, _ *url.URL) string { return "./" + strings.TrimPrefix(mixPath(r, 1), "/") }},
	{50, func(r *rand.Rand, _ *url.URL) string {
		return "#" + pick(r, []string{"", "top", "content", "section-2", "main"})
	}},
	{15, func(r *rand.Rand, _ *url.URL) string { return mixQuery(r) }},
	{25, func(r *rand.Rand, _ *url.URL) string { // percent-escapes
		return pick(r, []string{"/wiki/Caf%C3%A9", "/search?q=caf%c3%a9&x=%2F", "/files/My%20Document.pdf", "/%7Euser/", "/a%2fb", "/tag/c%2B%2B"})
	}},
	{20, func(r *rand.Rand, _ *url.URL) string { // upper-case hosts and schemes
		return pick(r, []string{"HTTPS://WWW.Example.COM/", "http://WWW.EXAMPLE.ORG/Index.html", "https://GitHub.com/trawler"})
	}},
	{10, func(r *rand.Rand, _ *url.URL) string { // default and other ports
		return pick(r, []string{"http://example.com:80/a", "https://www.example.com:443/", "http://localhost:8080/admin"})
	}},
	{25, func(r *rand.Rand, _ *url.URL) string { // IDN hosts
		return pick(r, []string{"https://bücher.example/katalog", "http://例え.jp/", "https://xn--bcher-kva.example/x", "https://münchen.de/"})
	}},
	{30, func(r *rand.Rand, _ *url.URL) string { // other schemes
		return pick(r, []string{"mailto:info@example.com", "javascript:void(0)", "javascript:;", "tel:+441234567890"})
	}},
	{10, func(r *rand.Rand, _ *url.URL) string { return " " + mixPath(r, 2) + "\n" }}, // sloppy markup
	{5, func(r *rand.Rand, _ *url.URL) string { return "" }},
	{5, func(r *rand.Rand, _ *url.URL) string { return "/a/./b/../c" + mixPath(r, 1) }},
	{5, func(r *rand.Rand, _ *url.URL) string { return "http://192.168.1.1/" + pick(r, mixWords) }},
	{5, func(r *rand.Rand, _ *url.URL) string {
		return "/search?q=" + pick(r, mixWords) + " " + pick(r, mixWords)
	}},
}

// linkMix returns pages pages of linksPerPage links each, the same every time.
func linkMix(pages, linksPerPage int) []mixPage {
	total := 0
	for _, f := range hrefForms {
		total += f.per1000
	}
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]mixPage, pages)
	for i := range out {
		out[i].url = mixBases[i%len(mixBases)]
		base, err := url.Parse(out[i].url)
		if err != nil {
			panic(err)
		}
		for range linksPerPage {
			n := r.IntN(total)
			for _, f := range hrefForms {
				if n -= f.per1000; n < 0 {
					out[i].hrefs = append(out[i].hrefs, f.gen(r, base))
					break
				}
			}
		}
	}
	return out
}

var (
	sinkString string
	sinkUint   uint64
)

// BenchmarkCanonicalizeMix is the parser's URL work per link on the mix
// (64 pages of 64 links): per page, the page URL canonicalized and prepared
// as a base (amortized over its links); per link, Base.Resolve, then Host and
// Fingerprint of the result. One op is one link; ns/URL repeats ns/op for the
// component report; cpu-ns/URL is the process's CPU time per link (the
// garbage collector's included), steadier than ns/URL on a machine busy
// with other work.
func BenchmarkCanonicalizeMix(b *testing.B) {
	benchmarkMix(b)
}

func benchmarkMix(b *testing.B) {
	pages := linkMix(64, 64)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := processCPU()
	var base *Base
	p, l := 0, 0
	for i := 0; i < b.N; i++ {
		if l == 0 {
			c, err := Canonicalize(pages[p].url)
			if err != nil {
				b.Fatal(err)
			}
			u, err := url.Parse(c)
			if err != nil {
				b.Fatal(err)
			}
			if base, err = NewBase(u); err != nil {
				b.Fatal(err)
			}
		}
		if s, err := base.Resolve(pages[p].hrefs[l]); err == nil {
			h, _ := Host(s)
			sinkString = h
			sinkUint += Fingerprint(s)
		}
		if l++; l == len(pages[p].hrefs) {
			l = 0
			if p++; p == len(pages) {
				p = 0
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/URL")
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/URL")
	}
}
