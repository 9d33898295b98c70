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

	"golang.org/x/net/html/charset"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

const (
	// MaxLinks caps the links taken from one page, against link farms and
	// generated junk (the Web's mean is about 60 links per page).
	MaxLinks = 10000
	// MaxLinkBytes caps the bytes of the links taken from one page, so that
	// the parsed document and the links sent to dedup stay far below the
	// NATS payload limit (1 MiB by default) whatever the page holds: 10,000
	// links of 16 KB each, resolved against a 16 KB <base>, made a 160 MB
	// document and a 2.5 GB process (issue 19).
	MaxLinkBytes = 256 << 10
	// maxWastedBytes bounds the work of resolving a page's links to no
	// avail: the bytes of the hrefs dropped as invalid or too long, and of
	// the base each was resolved against. A page of links that each resolve
	// over the URL length limit against a long <base> stops there
	// (truncated) rather than build 100,000 strings of 16 KB; an ordinary
	// page stays far below it (20,000 dropped hrefs of 150 bytes against a
	// 256-byte base). Plain relative links that would be too long are
	// dropped before resolving (relativeFloor), at no cost.
	maxWastedBytes = 8 << 20
	// MaxTitle caps the title, in bytes.
	MaxTitle = 512
	// MaxText caps the visible text kept of a page, in bytes.
	MaxText = 64 << 10
	// MaxHeadings caps the headings kept, MaxHeading the length of each and
	// MaxAnchor the anchor text kept with a link.
	MaxHeadings = 64
	MaxHeading  = 256
	MaxAnchor   = 256
	// contextWords is how many words on each side of an anchor make its
	// context (SharkSearch's link context).
	contextWords = 10
	// maxHrefs caps the raw href values kept while scanning a page, so that
	// memory stays bounded whatever the body holds; they are resolved once
	// the whole page (and its <base>) has been seen.
	maxHrefs = 10 * MaxLinks
)

// Page is what the extractor reads: a fetched body with its URL and the
// response headers that matter (Content-Type for the charset, X-Robots-Tag,
// Content-Language).
type Page struct {
	URL         string
	Body        []byte
	ContentType string
	Headers     map[string]string
	// MaxURLLength drops longer links, and a longer <base> is ignored
	// (0: urlx.MaxLength).
	MaxURLLength int
	// NoLinkContext leaves Link.Context empty: only SharkSearch's scoring
	// reads it, and cutting it out of the text for every link took 6 % of
	// a parser's CPU.
	NoLinkContext bool
}

// Link is one link of a page.
type Link struct {
	// URL is canonical http(s).
	URL  string
	Kind Kind
	// NoFollow is set by rel=nofollow on the element (the page-wide
	// directives are in Extracted.NoFollow).
	NoFollow bool
	// Anchor is the link's text (with the alt text of images in it), and
	// Context the words around it: both feed link scoring.
	Anchor, Context string
	// Sitemap: the link is a sitemap file, listed by a sitemap index.
	Sitemap bool
	// Hints are a sitemap's changefreq and lastmod for the URL, for a
	// continuous crawl's first interval; nil when it gave none.
	Hints *messages.Revisit
}

// Extracted is what a page yields.
type Extracted struct {
	Title string
	// Text is the visible text (no script, style or title), whitespace
	// collapsed, at most MaxText bytes; Headings the text of h1-h6.
	Text     string
	Headings []string
	// Lang is the document's language: <html lang>, else a
	// Content-Language meta tag or header.
	Lang string
	// Canonical is the page's rel=canonical URL (canonicalized), if any.
	Canonical string
	// Charset is the encoding the body was decoded from.
	Charset string
	// NoIndex and NoFollow come from <meta name=robots|trawler> and the
	// X-Robots-Tag header.
	NoIndex, NoFollow bool
	// Links are canonical http(s) URLs of the enabled kinds, in document
	// order, without repeats (the first occurrence wins); never nil.
	Links []Link
	// Dropped counts hrefs that did not resolve to an http(s) URL:
	// javascript:, mailto: and other schemes, and malformed URLs.
	Dropped int
	// TooLong counts links dropped for resolving longer than
	// Page.MaxURLLength.
	TooLong int
	// Truncated is set when the page had more links than MaxLinks, or more
	// than MaxLinkBytes of them, or took more than maxResolveBytes to
	// resolve.
	Truncated bool
}

// URLs returns the links' URLs.
func (e Extracted) URLs() []string {
	out := make([]string, len(e.Links))
	for i, l := range e.Links {
		out[i] = l.URL
	}
	return out
}

// Extract decodes a page to UTF-8 (charset from the Content-Type header, a
// BOM or a <meta> tag, as browsers decide it) and returns its title, text,
// headings, robots directives and the links of the given kinds. It streams
// through the tokenizer rather than building a tree, so it copes with any
// input, well formed or not; the only error is an unusable page URL.
//
// Links are resolved against the first <base href> of the page (itself
// resolved against the page URL; ignored when invalid), else the page URL,
// as browsers do.
func Extract(p Page, kinds Kind) (Extracted, error) {
	page, err := canonicalURL(p.URL)
	if err != nil {
		return Extracted{Links: []Link{}}, fmt.Errorf("page URL: %w", err)
	}
	body, cs := decode(p.Body, p.ContentType)
	s := scanPage(body, kinds)
	base, err := urlx.NewBase(page)
	if err != nil {
		return Extracted{Links: []Link{}}, fmt.Errorf("page URL: %w", err)
	}
	maxURL := p.MaxURLLength
	if maxURL <= 0 {
		maxURL = urlx.MaxLength
	}
	baseURL := page.String()
	if s.hasBase {
		// A <base> longer than a URL may be is ignored, as an invalid one
		// is: every link resolved against it would be too long anyway.
		if b, err := base.Resolve(s.baseHref); err == nil && len(b) <= maxURL {
			if u, err := url.Parse(b); err == nil {
				if nb, err := urlx.NewBase(u); err == nil {
					base, baseURL = nb, b
				}
			}
		}
	}
	ex := Extracted{
		Title: s.title, Text: s.text.String(), Headings: s.headings, Lang: s.lang, Charset: cs,
		NoIndex: s.noindex, NoFollow: s.nofollow,
	}
	if ex.Lang == "" {
		ex.Lang = cleanLang(p.Headers["Content-Language"])
	}
	if s.hasCanonical {
		if c, err := base.Resolve(s.canonical); err == nil && len(c) <= maxURL {
			ex.Canonical = c
		}
	}
	if v := p.Headers["X-Robots-Tag"]; v != "" {
		ni, nf := robotsDirectives(v, true)
		ex.NoIndex, ex.NoFollow = ex.NoIndex || ni, ex.NoFollow || nf
	}
	text := &s.text
	if p.NoLinkContext {
		text = nil
	}
	ex.Links, ex.Dropped, ex.TooLong, ex.Truncated = resolveLinks(base, baseURL, s.hrefs, text, maxURL)
	ex.Truncated = ex.Truncated || s.truncated
	s.release() // the text and the links' context are copies
	return ex, nil
}

// decode returns body as UTF-8 and the name of the encoding it was in. The
// encoding comes from a BOM, the Content-Type charset or a <meta> in the
// first 1024 bytes (the WHATWG encoding sniffing rules). Where browsers
// then guess from the first 1024 bytes, we take UTF-8 when the whole body
// is valid UTF-8 (ASCII included: nothing to decode) and windows-1252
// otherwise.
func decode(body []byte, contentType string) ([]byte, string) {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	if name == "windows-1252" && !certain && utf8.Valid(body) {
		name = "utf-8"
	}
	if name == "utf-8" {
		return bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), name
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil { // decoders replace bad input rather than fail; be safe
		return body, "utf-8"
	}
	// UTF-16 decoders keep the byte order mark as U+FEFF.
	return bytes.TrimPrefix(out, []byte("\uFEFF")), name
}

func canonicalURL(raw string) (*url.URL, error) {
	c, err := urlx.Canonicalize(raw)
	if err != nil {
		return nil, err
	}
	return url.Parse(c)
}

// resolveLinks canonicalizes hrefs against base, keeping the first of
// repeats, none longer than maxURL bytes (those are dropped and counted in
// tooLong), at most MaxLinks and MaxLinkBytes in all, and cuts each link's
// context out of text (none when text is nil). It stops (truncated) once maxWastedBytes of hrefs
// and base were resolved for links then dropped.
func resolveLinks(base *urlx.Base, baseURL string, hrefs []rawLink, text *textBuf, maxURL int) (links []Link, dropped, tooLong int, truncated bool) {
	baseLen, dirLen := len(baseURL), directoryLen(baseURL)
	links = make([]Link, 0, min(len(hrefs), MaxLinks))
	seen := make(map[string]int, cap(links))
	size, wasted := 0, 0
	for _, h := range hrefs {
		if relativeFloor(h.href, dirLen) > maxURL {
			tooLong++
			continue
		}
		if wasted > maxWastedBytes {
			return links, dropped, tooLong, true
		}
		u, err := base.Resolve(h.href)
		if err != nil {
			dropped++
			wasted += baseLen + len(h.href)
			continue
		}
		if len(u) > maxURL {
			tooLong++
			wasted += baseLen + len(h.href)
			continue
		}
		if i, dup := seen[u]; dup {
			// A repeat adds its anchor text when the first had none (an
			// image link followed by a text link to the same page).
			if links[i].Anchor == "" && h.anchor != "" {
				links[i].Anchor = h.anchor
			}
			links[i].NoFollow = links[i].NoFollow && h.nofollow
			continue
		}
		if len(links) == MaxLinks || size+len(u) > MaxLinkBytes {
			return links, dropped, tooLong, true
		}
		size += len(u)
		seen[u] = len(links)
		l := Link{URL: u, Kind: h.kind, NoFollow: h.nofollow, Anchor: h.anchor}
		if text != nil {
			l.Context = text.context(h.textStart, h.textEnd, contextWords)
		}
		links = append(links, l)
	}
	return links, dropped, tooLong, false
}

// relativeFloor is a lower bound on the length of href resolved against a
// base whose directory (scheme, host and path up to its last '/') takes
// dirLen bytes, when href is a plain path-relative reference: no scheme,
// no dot segment, no escape, no whitespace, nothing resolving can shorten
// (the fragment aside). 0 for any other href: it is resolved to be judged.
func relativeFloor(href string, dirLen int) int {
	if href == "" {
		return 0
	}
	switch href[0] {
	case '/', '\\', '?', '#':
		return 0
	}
	for i := 0; i < len(href); i++ {
		switch c := href[i]; {
		case c == '#':
			return dirLen + i
		case c == ':' || c == '.' || c == '%' || c <= ' ' || c == 0x7f:
			return 0
		}
	}
	return dirLen + len(href)
}

// directoryLen is the length of a canonical absolute URL's directory: up to
// and including the last '/' of its path.
func directoryLen(u string) int {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	authority := strings.Index(u, "://") + len("://")
	if i := strings.LastIndexByte(u, '/'); i >= authority {
		return i + 1
	}
	return len(u) + 1 // the path "/" canonicalization adds
}

// cleanTitle collapses ASCII whitespace as document.title does, repairs
// invalid UTF-8 and caps the length on a rune boundary.
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
	t := b.String()
	if !utf8.ValidString(t) {
		t = strings.ToValidUTF8(t, "\uFFFD")
	}
	return capUTF8(t, MaxTitle)
}

// capUTF8 cuts s to at most n bytes on a rune boundary.
func capUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ")
}

// cleanLang keeps the first language tag of a lang attribute or a
// Content-Language value ("en-GB, fr" gives "en-GB"), if it looks like one.
func cleanLang(v string) string {
	v, _, _ = strings.Cut(v, ",")
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 35 {
		return ""
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return ""
		}
	}
	return v
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
