package websim

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFilesWebTruthFollowsThePagesOwnLinks: the ground truth of a files web
// is what its pages link to, in every form, within the web only.
func TestFilesWebTruthFollowsThePagesOwnLinks(t *testing.T) {
	a := writeTree(t, map[string]string{
		"index.html": `<a href="guide/">guide</a> <a href="b.html#top">b</a> <a href="https://example.org/x">out</a>
			<a href="mailto:x@example.org">mail</a> <a href="http://site1.test:18099/">other host</a> <a href="missing.html">gone</a>
			<a href="guide">dir without slash</a> <a rel="nofollow" href="secret.html">nf</a>`,
		"b.html":           `<base href="/guide/"><a href="c.html?x=1">c</a> <a href="../../b.html">b again</a>`,
		"guide/index.html": `<iframe src="frame.html"></iframe>`,
		"guide/c.html":     `no links`,
		"guide/frame.html": `<a href="../style.css">css</a>`,
		"style.css":        `body{}`,
		"secret.html":      `nofollow target`,
	})
	b := writeTree(t, map[string]string{"index.html": `<a href="/nowhere/">x</a>`})
	w, err := New(Config{Dirs: []string{a, b}, Port: 18099})
	if err != nil {
		t.Fatal(err)
	}
	if c := w.Config(); c.Hosts != 2 || len(w.Seeds()) != 2 || !c.Discovery {
		t.Fatalf("config %+v, seeds %v: want two hosts, both seeds, named", c, w.Seeds())
	}
	tr := w.Truth()
	var got []string
	for u := range tr.URLs {
		got = append(got, u)
	}
	sort.Strings(got)
	want := []string{
		"http://site0.test:18099/", "http://site0.test:18099/b.html", "http://site0.test:18099/guide",
		"http://site0.test:18099/guide/", "http://site0.test:18099/guide/c.html?x=1", "http://site0.test:18099/guide/frame.html",
		"http://site0.test:18099/missing.html", "http://site0.test:18099/style.css",
		"http://site1.test:18099/", "http://site1.test:18099/nowhere/",
	}
	if len(got) != len(want) {
		t.Fatalf("truth %v\nwant  %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("truth %v\nwant  %v", got, want)
		}
	}
	if tr.Redirects != 1 || tr.NotFound != 2 {
		t.Errorf("redirects %d, 404s %d: want 1 (guide -> guide/) and 2", tr.Redirects, tr.NotFound)
	}
}

// TestFilesWebServesFilesAsAStaticServerDoes, over real HTTP on loopback.
func TestFilesWebServesFilesAsAStaticServerDoes(t *testing.T) {
	a := writeTree(t, map[string]string{"index.html": "<p>home</p>", "d/index.html": "<p>d</p>", "s.css": "body{}"})
	w, err := New(Config{Dirs: []string{a}, Port: 18098, Block: 9})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(w)
	if err != nil {
		t.Skip(err)
	}
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct{ path, status, ctype, body string }{
		{"/", "200 OK", "text/html; charset=utf-8", "<p>home</p>"},
		{"/d/?q=1", "200 OK", "text/html; charset=utf-8", "<p>d</p>"},
		{"/d", "301 Moved Permanently", "", ""},
		{"/s.css", "200 OK", "text/css; charset=utf-8", "body{}"},
		{"/../../etc/passwd", "404 Not Found", "", ""},
		{"/robots.txt", "200 OK", "text/plain", filesRobots},
	} {
		resp, err := client.Get("http://" + w.Addr(0) + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Status != c.status || c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype || c.body != "" && string(body) != c.body {
			t.Errorf("%s: %s %q %q; want %s %q %q", c.path, resp.Status, resp.Header.Get("Content-Type"), body, c.status, c.ctype, c.body)
		}
	}
}
