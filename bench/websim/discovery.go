package websim

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"sync"
)

// The discovery mode writes every link the way some page on the web would:
// the same target under many spellings, all of which a correct crawler
// resolves and canonicalizes to the one URL of Link.URL. Shares, of the
// links of a page:
//
//	same host:  /p/12 30 %, bare name (12, p/12, ../old/3) 15 %, ./12 7 %,
//	            ../ where none is needed (../p/12, above the root from /) 8 %,
//	            absolute 15 %, scheme-relative //site3.test/p/12 10 %,
//	            default port http://site3.test:80/p/12 5 %, upper-case host
//	            (HTTP://SITE3.TEST/p/12, http://Site3.Test/p/12) 10 %;
//	other host: absolute 50 % (a home page half the time without its
//	            slash: http://site3.test), scheme-relative 20 %, default
//	            port 10 %, upper-case host 20 %;
//	on top:     a fragment (#top, #section-4, a bare #) 10 %; and half
//	            the pages link themselves with href="#top".
//
// The default-port form needs the web on port 80; elsewhere those links
// are written absolute.
//
// One form is not a spelling: an empty query (/p/12?, 0.1 % of links).
// RFC 3986 (6.2.3) says http://example.com/? "cannot be assumed to be
// equivalent" to http://example.com/, and the WHATWG URL standard keeps the
// "?", so such a link is a URL of its own (in Link.URL and the truth) that
// serves the same page, as duplicate content does on the web: a correct
// crawler fetches it.
const (
	fragmentShare   = 0.10
	emptyQueryShare = 0.001
	selfLinkShare   = 0.5
)

// writeHrefs gives each link of page (h, path) its written form, from a
// random stream of its own (the targets are those of the same page drawn
// without it), and appends the page's self link.
func (w *Web) writeHrefs(h int, path string, res Resource, links []Link) []Link {
	r := newRNG(w.cfg.Seed^0x68726566, uint64(h)+1, uint64(res.page)<<1|res.salt)
	dir := path[:strings.LastIndexByte(path, '/')+1]
	for i := range links {
		t, tpath, ok := w.split(links[i].URL)
		if !ok {
			continue
		}
		var href string
		if t == h {
			href = w.sameHostHref(r, dir, t, tpath)
		} else {
			href = w.otherHostHref(r, t, tpath)
		}
		frag, query := decorations(r)
		if query {
			href += "?"
			links[i].URL += "?"
		}
		links[i].Href = href + frag
	}
	if res.page >= 0 && r.float() < selfLinkShare {
		links = append(links, Link{Href: "#top", URL: w.Origin(h) + path})
	}
	return links
}

func (w *Web) sameHostHref(r *rng, dir string, t int, tpath string) string {
	switch x := r.float(); {
	case x < 0.30:
		return tpath
	case x < 0.45:
		return relRef(dir, tpath)
	case x < 0.52:
		if rel := relRef(dir, tpath); !strings.HasPrefix(rel, "../") && rel != "./" {
			return "./" + rel
		}
		return tpath
	case x < 0.60:
		// More ../ than needed: above the root they are dropped.
		return strings.Repeat("../", max(1, strings.Count(dir, "/")-1)) + tpath[1:]
	case x < 0.75:
		return w.Origin(t) + tpath
	case x < 0.85:
		return "//" + w.HostPort(t) + tpath
	case x < 0.90:
		return w.defaultPort(t) + tpath
	default:
		return w.upperHost(r, t) + tpath
	}
}

func (w *Web) otherHostHref(r *rng, t int, tpath string) string {
	switch x := r.float(); {
	case x < 0.50:
		if tpath == "/" && r.float() < 0.5 {
			return w.Origin(t) // no path at all: the home page
		}
		return w.Origin(t) + tpath
	case x < 0.70:
		return "//" + w.HostPort(t) + tpath
	case x < 0.80:
		return w.defaultPort(t) + tpath
	default:
		return w.upperHost(r, t) + tpath
	}
}

// defaultPort is host t's origin with the port written out: :80 when the
// web is on port 80 (the same URL), the plain origin elsewhere.
func (w *Web) defaultPort(t int) string {
	if w.cfg.Port == 80 {
		return "http://" + w.Name(t) + ":80"
	}
	return w.Origin(t)
}

// upperHost is host t's origin with its name in upper or mixed case.
func (w *Web) upperHost(r *rng, t int) string {
	name := w.Name(t)
	if r.float() < 0.5 {
		name = strings.ToUpper(name)
		if w.cfg.Port != 80 {
			name += ":" + strconv.Itoa(w.cfg.Port)
		}
		return "HTTP://" + name
	}
	if len(name) > 0 {
		name = strings.ToUpper(name[:1]) + name[1:]
	}
	if i := strings.IndexByte(name, '.'); i >= 0 && i+1 < len(name) {
		name = name[:i+1] + strings.ToUpper(name[i+1:i+2]) + name[i+2:]
	}
	if w.cfg.Port != 80 {
		name += ":" + strconv.Itoa(w.cfg.Port)
	}
	return "http://" + name
}

// relRef writes target (an absolute path) relative to the directory dir
// ("/" or "/p/"): a bare name below dir, ../ steps otherwise.
func relRef(dir, target string) string {
	if rest, ok := strings.CutPrefix(target, dir); ok {
		if rest == "" {
			return "./"
		}
		return rest
	}
	return strings.Repeat("../", strings.Count(dir, "/")-1) + target[1:]
}

// decorations draws what a link gets on top of its target: a fragment,
// which a crawler strips, and an empty query, which makes another URL.
func decorations(r *rng) (frag string, query bool) {
	if r.float() < fragmentShare {
		switch r.intn(3) {
		case 0:
			frag = "#top"
		case 1:
			frag = "#section-" + strconv.Itoa(1+r.intn(9))
		default:
			frag = "#"
		}
	}
	return frag, r.float() < emptyQueryShare
}

// The text of discovery pages: sentences of made-up words drawn with Zipf
// frequencies, so that a page compresses about as well as prose does (the
// seeded web's repeated lorem ipsum compresses ~50 times, which would make
// WARC files look cheap). One corpus, sliced per page.
var (
	corpusOnce sync.Once
	corpus     string
	vocabulary []string
)

const corpusBytes = 2 << 20

func textCorpus() string {
	corpusOnce.Do(func() {
		r := newRNG(0x7e47, 1, 2)
		syll := []string{"ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu", "na", "pe", "ri", "so", "tu", "va",
			"we", "xi", "yo", "za", "ar", "en", "is", "or", "un", "st", "tr", "pl", "qu", "th", "ch", "sh"}
		seen := map[string]bool{}
		for len(vocabulary) < 4000 {
			n := 1 + r.intn(4)
			var b strings.Builder
			for range n {
				b.WriteString(syll[r.intn(len(syll))])
			}
			if wd := b.String(); !seen[wd] {
				seen[wd] = true
				vocabulary = append(vocabulary, wd)
			}
		}
		z := newZipf(len(vocabulary), 1.05)
		var b strings.Builder
		b.Grow(corpusBytes + 256)
		for b.Len() < corpusBytes {
			n := 6 + r.intn(20)
			for i := range n {
				wd := vocabulary[z.sample(r)]
				if i == 0 {
					wd = strings.ToUpper(wd[:1]) + wd[1:]
				}
				b.WriteString(wd)
				switch {
				case i == n-1:
					b.WriteString(". ")
				case r.float() < 0.07:
					b.WriteString(", ")
				default:
					b.WriteByte(' ')
				}
			}
		}
		corpus = b.String()
	})
	return corpus
}

// words returns n words of the corpus from offset off, for anchors and
// titles.
func words(off, n int) string {
	c := textCorpus()
	off %= len(c) - 400
	if i := strings.IndexByte(c[off:], ' '); i >= 0 {
		off += i + 1
	}
	end := off
	for range n {
		i := strings.IndexByte(c[end:], ' ')
		if i < 0 {
			break
		}
		end += i + 1
	}
	return strings.Trim(c[off:end], " ,.")
}

// textAt is about n bytes of the corpus from offset off, cut at spaces.
func textAt(off, n int) string {
	c := textCorpus()
	if n <= 0 {
		return ""
	}
	n = min(n, len(c)/2)
	off %= len(c) - n - 64
	if i := strings.IndexByte(c[off:], ' '); i >= 0 {
		off += i + 1
	}
	end := off + n
	if i := strings.IndexByte(c[end:], ' '); i >= 0 {
		end += i
	}
	return c[off:end]
}

const discoveryHead = `<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>body{font-family:Georgia,serif;max-width:46em;margin:0 auto;line-height:1.5}header nav a{margin-right:1em}footer{color:#666;font-size:.9em}</style>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag("js",new Date());</script>
`

// discoveryPage renders page (h, path) in the discovery mode: a realistic
// shell (head, style, script, navigation, article, footer) around
// paragraphs of text with the page's links inline, up to BodySize.
func (w *Web) discoveryPage(h int, path string) []byte {
	links := w.Links(h, path)
	size := w.BodySize(h, path)
	seed := int(hashString(w.Name(h)+strings.TrimSuffix(path, "?")) & 0x7fffffff)
	title := words(seed, 3+seed%5)
	b := make([]byte, 0, size+1024)
	b = fmt.Appendf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>%s | %s</title>\n<meta name=\"description\" content=\"%s\">\n%s</head>\n<body>\n",
		html.EscapeString(title), w.Name(h), html.EscapeString(words(seed+101, 12)), discoveryHead)
	if t := w.Topic(h, path); t >= 0 {
		word := topicWords[t%len(topicWords)]
		b = fmt.Appendf(b, "<h1>About %s (topic %d)</h1>\n<p>%s %s %s.</p>\n", word, t, word, word, word)
	}
	// The first links (home, next page, next host) are the navigation.
	nav := min(len(links), 3)
	b = append(b, "<header><nav>"...)
	for i, l := range links[:nav] {
		b = fmt.Appendf(b, "<a href=\"%s\">%s</a>", html.EscapeString(l.Href), html.EscapeString(words(seed+7*i, 1)))
	}
	b = fmt.Appendf(b, "</nav></header>\n<main><article>\n<h1 id=\"top\">%s</h1>\n<p>", html.EscapeString(title))
	footer := fmt.Sprintf("</p>\n</article></main>\n<footer><p>&copy; 2026 %s. %s.</p></footer>\n</body></html>\n", w.Name(h), words(seed+13, 8))
	rest := links[nav:]
	linkBytes := 0
	for _, l := range rest {
		linkBytes += len(l.Href) + 40
	}
	gap := max(0, (size-len(b)-linkBytes-len(footer))/(len(rest)+1))
	off := seed
	for i, l := range rest {
		b = append(b, textAt(off, gap)...)
		off += gap + 7919
		b = fmt.Appendf(b, " <a href=\"%s\">%s</a> ", html.EscapeString(l.Href), words(off, 1+i%3))
		if i%4 == 3 {
			b = append(b, "</p>\n<p>"...)
		}
		if i%16 == 15 {
			b = fmt.Appendf(b, "</p>\n<h2 id=\"section-%d\">%s</h2>\n<p>", i/16+1, words(off+3, 4))
		}
	}
	b = append(b, textAt(off, gap)...)
	return append(b, footer...)
}
