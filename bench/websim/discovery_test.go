package websim

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// canonical is the reference canonicalization the discovery web's hrefs
// are written against: host lower-cased, default port and fragment dropped
// (an empty query stays: another URL).
func canonical(u *url.URL) string {
	c := *u
	c.Scheme = strings.ToLower(c.Scheme)
	c.Host = strings.TrimSuffix(strings.ToLower(c.Host), ":80")
	c.Fragment, c.RawFragment = "", ""
	if c.Path == "" {
		c.Path = "/"
	}
	return c.String()
}

// Every href of a discovery page, resolved against the page's URL the way
// a browser does and canonicalized, is the link's URL; and every form the
// mode promises occurs.
func TestDiscoveryHrefsResolveToTheirURL(t *testing.T) {
	w, err := New(Config{Seed: 3, Hosts: 30, Pages: 100, Port: 80, Discovery: true})
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]int{}
	total := 0
	for h := 0; h < 30; h += 3 {
		for _, path := range []string{"/", "/p/1", "/p/17", "/p/99", "/private/2"} {
			base, _ := url.Parse(w.Origin(h) + path)
			for _, l := range w.Links(h, path) {
				ref, err := url.Parse(l.Href)
				if err != nil {
					t.Fatalf("%s: href %q: %v", base, l.Href, err)
				}
				if got := canonical(base.ResolveReference(ref)); got != l.URL {
					t.Fatalf("%s: href %q resolves to %s, want %s", base, l.Href, got, l.URL)
				}
				total++
				switch href := l.Href; {
				case strings.HasPrefix(href, "HTTP://"), strings.HasPrefix(href, "http://S"):
					forms["upper-case host"]++
				case strings.Contains(href, ":80/"), strings.HasSuffix(href, ":80"):
					forms["default port"]++
				case strings.HasPrefix(href, "http://"):
					forms["absolute"]++
				case strings.HasPrefix(href, "//"):
					forms["scheme-relative"]++
				case strings.HasPrefix(href, "../"):
					forms["../"]++
				case strings.HasPrefix(href, "./"):
					forms["./"]++
				case strings.HasPrefix(href, "/"):
					forms["host-relative"]++
				case strings.HasPrefix(href, "#"):
					forms["self #fragment"]++
				default:
					forms["bare name"]++
				}
				if strings.Contains(l.Href, "#") && !strings.HasPrefix(l.Href, "#") {
					forms["with #fragment"]++
				}
				if strings.Contains(l.Href, "?") != strings.HasSuffix(l.URL, "?") {
					t.Fatalf("%s: href %q, URL %s: the empty query must make another URL", base, l.Href, l.URL)
				}
				if strings.Contains(l.Href, "?") {
					forms["empty query"]++
				}
			}
		}
	}
	t.Logf("%d links: %v", total, forms)
	for _, f := range []string{"upper-case host", "default port", "absolute", "scheme-relative", "../", "./", "host-relative", "bare name", "self #fragment", "with #fragment", "empty query"} {
		if forms[f] == 0 {
			t.Errorf("no link written as %s", f)
		}
	}
}

// One seed reaches every page of every host.
func TestDiscoveryTruthFromOneSeed(t *testing.T) {
	w, _ := New(Config{Seed: 1, Hosts: 40, Pages: 30, Discovery: true})
	if s := w.Seeds(); len(s) != 1 || s[0] != "http://site0.test:18080/" {
		t.Fatalf("seeds %v", s)
	}
	tr := w.Truth()
	twins := 0
	for u, k := range tr.URLs {
		if k == KindPage && strings.HasSuffix(u, "?") {
			twins++
		}
	}
	if tr.Pages-twins != 40*30 || twins > tr.Pages/10 || tr.EmptyQuery < twins {
		t.Fatalf("truth has %d pages, %d of them with an empty query (%d URLs), want %d and a few", tr.Pages, twins, tr.EmptyQuery, 40*30)
	}
	// The seeded web is unchanged by the mode's existence: the same links.
	a, _ := New(Config{Seed: 1, Hosts: 40, Pages: 30})
	if l := a.Links(2, "/p/3"); l[0].Href != "/" || !strings.HasPrefix(l[0].URL, "http://127.1.1.3:18080/") {
		t.Fatalf("seeded web changed: %+v", l[0])
	}
}

// Pages are ~16 KB at the median, of text that compresses like prose.
func TestDiscoveryPages(t *testing.T) {
	w, _ := New(Config{Seed: 2, Hosts: 10, Pages: 100, Discovery: true})
	var sizes []int
	var all bytes.Buffer
	for h := range 10 {
		for n := 1; n < 100; n += 9 {
			p := w.Page(h, pagePath(n))
			sizes = append(sizes, len(p))
			all.Write(p)
			if !bytes.Contains(p, []byte("</html>")) || !bytes.Contains(p, []byte("<p>")) {
				t.Fatalf("page %d %d is not a document", h, n)
			}
		}
	}
	sort.Ints(sizes)
	med := sizes[len(sizes)/2]
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write(all.Bytes()[:64<<10])
	_ = zw.Close()
	ratio := float64(64<<10) / float64(z.Len())
	t.Logf("median page %d bytes; gzip ratio of page text %.2f", med, ratio)
	if med < 12<<10 || med > 21<<10 {
		t.Errorf("median page %d bytes, want ~16 KB", med)
	}
	if ratio < 2 || ratio > 5 {
		t.Errorf("pages compress %.1f times; prose is 2-5", ratio)
	}
}

// The DNS server answers the hosts' names, in any case, and nothing else;
// the proxy hands requests to their hosts, and the audit sees a request
// under another spelling of a URL as an alias.
func TestDiscoveryDNSProxyAndAliases(t *testing.T) {
	w, _ := New(Config{Seed: 5, Hosts: 3, Pages: 15, Port: 18974, Block: 77, Discovery: true})
	s, err := Serve(w)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", s.DNSAddr())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := r.LookupHost(ctx, "SITE2.test")
	if err != nil || len(ips) != 1 || ips[0] != "127.77.1.3" {
		t.Fatalf("site2.test: %v %v", ips, err)
	}
	if _, err := r.LookupHost(ctx, "site3.test"); err == nil {
		t.Fatal("site3.test of a 3-host web resolved")
	}
	proxy, _ := url.Parse("http://" + s.ProxyAddr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) int {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	tr := w.Truth()
	for u := range tr.URLs {
		get(u)
	}
	if st := get("http://site1.test:18974/p/3?"); st != 200 {
		t.Fatalf("an empty query: status %d", st)
	}
	get("http://site1.test:18974/p/../p/4")
	get("http://site1.test:18974/p/4")
	time.Sleep(10 * time.Millisecond)
	a := w.Judge(tr, s.Log(), s.MaxConcurrent, 0)
	unknown := 0
	if _, ok := tr.URLs["http://site1.test:18974/p/3?"]; !ok {
		unknown = 1 // an empty query is a URL of its own; this one is linked from nowhere
	}
	if a.Fetched != len(tr.URLs) || a.Duplicates != 2 || a.Aliases != 1 || a.Unknown != unknown {
		t.Fatalf("audit %+v, truth %d URLs", a, len(tr.URLs))
	}
}
