package websim

// The files web: real pages instead of generated ones. Each directory of
// Config.Dirs is one host (siteN.test, on its own loopback address, as in
// the discovery mode) serving its files as a plain static server does: a
// path ending in "/" serves its index.html, a directory without the slash
// redirects to it, the query is ignored, anything else is 404. The ground
// truth is found by following the pages' own links (<a>, <area>, <frame>,
// <iframe>; <base> honoured), as a crawler does; links to anything outside
// the web (other sites, mailto:) are not part of it. A real documentation
// tree, served as such, is the web a user's first crawl meets.

import (
	"bytes"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/net/html"
)

// filesRobots allows everything: documentation trees have no robots.txt.
const filesRobots = "User-agent: *\nDisallow:\n"

// fileOf maps a request path of host h to the file it names, and reports
// whether it is a directory. ok is false when nothing is there.
func (w *Web) fileOf(h int, p string) (name string, dir, ok bool) {
	p, _, _ = strings.Cut(p, "?")
	if un, err := url.PathUnescape(p); err == nil {
		p = un
	}
	clean := path.Clean("/" + p) // never above the tree's root
	name = filepath.Join(w.cfg.Dirs[h], filepath.FromSlash(clean))
	fi, err := os.Stat(name)
	if err != nil {
		return "", false, false
	}
	return name, fi.IsDir(), true
}

// resolveFile is Resolve for the files web.
func (w *Web) resolveFile(h int, p string) Resource {
	notFound := Resource{Kind: KindNotFound, Status: 404}
	if p == "/robots.txt" {
		return Resource{Kind: KindRobots, Status: 200}
	}
	name, dir, ok := w.fileOf(h, p)
	p, _, _ = strings.Cut(p, "?")
	switch {
	case !ok:
		return notFound
	case dir && !strings.HasSuffix(p, "/"):
		return Resource{Kind: KindRedirect, Status: 301, Target: w.Origin(h) + p + "/"}
	case dir:
		if fi, err := os.Stat(filepath.Join(name, "index.html")); err != nil || fi.IsDir() {
			return notFound
		}
	}
	return Resource{Kind: KindPage, Status: 200}
}

// fileBody is what host h serves at path p (a page Resolve found), with its
// content type.
func (w *Web) fileBody(h int, p string) ([]byte, string) {
	name, dir, ok := w.fileOf(h, p)
	if !ok {
		return nil, ""
	}
	if dir {
		name = filepath.Join(name, "index.html")
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, ""
	}
	ct := mime.TypeByExtension(filepath.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	return b, ct
}

// isHTMLFile tells whether a served file is a page whose links count.
func isHTMLFile(contentType string) bool { return strings.HasPrefix(contentType, "text/html") }

// fileLinks are the links of the HTML file at host h, path p that lead into
// the web: absolute, canonical, fragments dropped, in page order.
func (w *Web) fileLinks(h int, p string) []Link {
	body, ct := w.fileBody(h, p)
	if !isHTMLFile(ct) {
		return nil
	}
	base, err := url.Parse(w.Origin(h) + p)
	if err != nil {
		return nil
	}
	var links []Link
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return links
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		var want string
		switch string(name) {
		case "a", "area", "base":
			want = "href"
		case "frame", "iframe":
			want = "src"
		default:
			continue
		}
		var val string
		var nofollow, found bool
		for hasAttr {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			switch string(k) {
			case want:
				val, found = strings.TrimSpace(string(v)), true
			case "rel":
				nofollow = strings.Contains(strings.ToLower(string(v)), "nofollow")
			}
		}
		if !found {
			continue
		}
		ref, err := base.Parse(val)
		if err != nil {
			continue
		}
		if string(name) == "base" {
			base = ref
			continue
		}
		if nofollow || ref.Scheme != "http" && ref.Scheme != "https" {
			continue
		}
		th := w.HostOf(strings.ToLower(ref.Host))
		if th < 0 {
			continue
		}
		links = append(links, Link{Href: val, URL: w.Origin(th) + Target(ref)})
	}
}
