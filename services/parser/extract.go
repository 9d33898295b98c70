package parser

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/trawlerhq/trawler/pkg/urlx"
)

const (
	// MaxLinks caps the links taken from one page, against link farms and
	// generated junk (the Web's mean is about 60 links per page).
	MaxLinks = 10000
	// MaxTitle caps the title, in bytes.
	MaxTitle = 512
	// maxHrefs caps the raw href values kept while scanning a page, so that
	// memory stays bounded whatever the body holds; they are resolved once
	// the whole page (and its <base>) has been seen.
	maxHrefs = 10 * MaxLinks
)

// Extracted is what a page yields.
type Extracted struct {
	Title string
	// Links are canonical http(s) URLs, in document order, without repeats;
	// never nil, so it encodes as a JSON array.
	Links []string
	// Dropped counts hrefs that did not resolve to an http(s) URL:
	// javascript:, mailto: and other schemes, and malformed URLs.
	Dropped int
	// Truncated is set when the page had more links than MaxLinks.
	Truncated bool
}

// Extract returns the title and the links of an HTML page fetched from
// pageURL. It streams through the tokenizer rather than building a tree, so
// it copes with any input, well formed or not; the only error is an unusable
// pageURL.
//
// Links come from <a href> and <area href>, resolved against the first
// <base href> of the page (itself resolved against pageURL; ignored when
// invalid), else pageURL, as browsers do.
func Extract(body []byte, pageURL string) (Extracted, error) {
	page, err := canonicalURL(pageURL)
	if err != nil {
		return Extracted{Links: []string{}}, fmt.Errorf("page URL: %w", err)
	}
	s := scanPage(body)
	base := page
	if s.hasBase {
		if b, err := urlx.Resolve(page, s.baseHref); err == nil {
			if u, err := url.Parse(b); err == nil {
				base = u
			}
		}
	}
	ex := Extracted{Title: s.title}
	ex.Links, ex.Dropped, ex.Truncated = resolveLinks(base, s.hrefs)
	ex.Truncated = ex.Truncated || s.truncated
	return ex, nil
}

func canonicalURL(raw string) (*url.URL, error) {
	c, err := urlx.Canonicalize(raw)
	if err != nil {
		return nil, err
	}
	return url.Parse(c)
}

// scanned is what one pass of the tokenizer collects.
type scanned struct {
	title     string
	baseHref  string
	hasBase   bool
	hrefs     []string
	truncated bool // more than maxHrefs hrefs
}

func scanPage(body []byte) scanned {
	var s scanned
	z := html.NewTokenizer(bytes.NewReader(body))
	titleSeen, inTitle := false, false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken: // io.EOF: a bytes.Reader has no other error
			return s
		case html.TextToken:
			// The tokenizer reads a title's content as one text token.
			if inTitle {
				s.title = cleanTitle(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "a", "area":
				if href, ok := attr(z, hasAttr, "href"); ok {
					s.addHref(href)
				}
			case "base":
				if href, ok := attr(z, hasAttr, "href"); ok && !s.hasBase {
					s.baseHref, s.hasBase = href, true
				}
			case "title":
				if !titleSeen && tt == html.StartTagToken {
					titleSeen = true
					inTitle = true
					continue
				}
			}
		}
		inTitle = false
	}
}

func (s *scanned) addHref(href string) {
	if len(s.hrefs) >= maxHrefs {
		s.truncated = true
		return
	}
	s.hrefs = append(s.hrefs, href)
}

// attr returns the value of the first attribute called key (HTML ignores
// later duplicates).
func attr(z *html.Tokenizer, hasAttr bool, key string) (string, bool) {
	for more := hasAttr; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		if string(k) == key {
			return string(v), true
		}
	}
	return "", false
}

// resolveLinks canonicalizes hrefs against base, keeping the first of
// repeats and at most MaxLinks.
func resolveLinks(base *url.URL, hrefs []string) (links []string, dropped int, truncated bool) {
	links = make([]string, 0, min(len(hrefs), MaxLinks))
	seen := make(map[string]struct{}, cap(links))
	for _, href := range hrefs {
		link, err := urlx.Resolve(base, href)
		if err != nil {
			dropped++
			continue
		}
		if _, dup := seen[link]; dup {
			continue
		}
		if len(links) == MaxLinks {
			return links, dropped, true
		}
		seen[link] = struct{}{}
		links = append(links, link)
	}
	return links, dropped, false
}

// cleanTitle collapses ASCII whitespace as document.title does, repairs
// invalid UTF-8 (bodies are not transcoded) and caps the length on a rune
// boundary.
func cleanTitle(raw []byte) string {
	var b strings.Builder
	space := false
	for _, c := range raw {
		if c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(c)
		if b.Len() > MaxTitle+utf8.UTFMax {
			break
		}
	}
	t := strings.ToValidUTF8(b.String(), "\uFFFD")
	if len(t) > MaxTitle {
		cut := MaxTitle
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = strings.TrimRight(t[:cut], " ")
	}
	return t
}

// IsHTML reports whether a response is an HTML document: by its media type
// (text/html or application/xhtml+xml), or, when the Content-Type header is
// missing or unparsable, by sniffing the body as net/http does.
func IsHTML(contentType string, body []byte) bool {
	mt, ok := mediaType(contentType)
	if !ok {
		mt, _ = mediaType(http.DetectContentType(body))
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

func mediaType(contentType string) (string, bool) {
	if strings.TrimSpace(contentType) == "" {
		return "", false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return "", false
	}
	return mt, true
}
