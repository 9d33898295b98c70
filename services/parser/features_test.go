package parser

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestRobotsDirectives(t *testing.T) {
	tests := []struct {
		v                 string
		header            bool
		noindex, nofollow bool
	}{
		{"noindex, nofollow", false, true, true},
		{"NOFOLLOW", false, false, true},
		{"none", false, true, true},
		{"index,follow", false, false, false},
		{"noindex nofollow", false, true, true}, // spaces instead of commas
		{"noindex", true, true, false},
		{"googlebot: nofollow", true, false, false}, // addressed to another crawler
		{"googlebot: noindex, trawler: nofollow", true, false, true},
		{"Trawler: NONE", true, true, true},
		{"unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow", true, false, true},
		{"max-snippet: 20, noindex", true, true, false},
		{"", true, false, false},
	}
	for _, tt := range tests {
		ni, nf := robotsDirectives(tt.v, tt.header)
		if ni != tt.noindex || nf != tt.nofollow {
			t.Errorf("robotsDirectives(%q, header %v) = %v, %v; want %v, %v", tt.v, tt.header, ni, nf, tt.noindex, tt.nofollow)
		}
	}
}

func TestXRobotsTagHeader(t *testing.T) {
	body := []byte(`<title>t</title><a href="/x">x</a>`)
	for header, want := range map[string]bool{"": false, "nofollow": true, "otherbot: nofollow": false, "trawler: nofollow": true} {
		ex, err := Extract(Page{URL: page, Body: body, Headers: map[string]string{"X-Robots-Tag": header}}, DefaultKinds)
		if err != nil {
			t.Fatal(err)
		}
		if ex.NoFollow != want || len(ex.Links) != 1 {
			t.Errorf("X-Robots-Tag %q: nofollow %v, want %v (%d links: still listed)", header, ex.NoFollow, want, len(ex.Links))
		}
	}
	ex := extract(t, `<meta name="trawler" content="noindex">`)
	if !ex.NoIndex || ex.NoFollow {
		t.Errorf("meta name=trawler: noindex %v nofollow %v", ex.NoIndex, ex.NoFollow)
	}
}

func TestRefreshURL(t *testing.T) {
	tests := map[string]string{
		"5; url=/a":         "/a",
		"0;URL='/b c'":      "/b c",
		`3, url="/c"`:       "/c",
		"1; /d":             "/d",
		"  2.5 ; Url = /e ": "/e",
		"10":                "",
		"; url=/f":          "",
		"x; url=/g":         "",
		"0; url='":          "",
	}
	for content, want := range tests {
		got, ok := refreshURL(content)
		if got != want || ok != (want != "") {
			t.Errorf("refreshURL(%q) = %q, %v; want %q", content, got, ok, want)
		}
	}
}

func TestSrcset(t *testing.T) {
	tests := map[string][]string{
		"a.jpg":                         {"a.jpg"},
		"a.jpg 1x, b.jpg 2x":            {"a.jpg", "b.jpg"},
		"a.jpg 1x,b.jpg 2x":             {"a.jpg", "b.jpg"},
		"a.jpg,b.jpg":                   {"a.jpg,b.jpg"}, // a URL runs to whitespace
		"a.jpg, b.jpg":                  {"a.jpg", "b.jpg"},
		"  , ,a.jpg 100w (x, y), b.jpg": {"a.jpg", "b.jpg"},
		"":                              nil,
	}
	for v, want := range tests {
		var got []string
		eachSrcset(v, func(u string) { got = append(got, u) })
		if !slices.Equal(got, want) {
			t.Errorf("srcset %q: %q, want %q", v, got, want)
		}
	}
}

func TestLinkKinds(t *testing.T) {
	body := `<a href=/a></a><img src=/i.png><script src=/s.js></script><link rel=canonical href=/canon>` +
		`<iframe src=/if></iframe><meta http-equiv=refresh content="0;url=/r">`
	for _, tt := range []struct {
		kinds Kind
		want  []string
	}{
		{KindA, []string{"/a"}},
		{KindImg | KindScript, []string{"/i.png", "/s.js"}},
		{DefaultKinds, []string{"/a", "/if", "/r"}},
		{AllKinds, []string{"/a", "/i.png", "/s.js", "/canon", "/if", "/r"}},
	} {
		ex, _ := Extract(Page{URL: page, Body: []byte(body)}, tt.kinds)
		var got []string
		for _, u := range ex.URLs() {
			got = append(got, strings.TrimPrefix(u, "http://example.com"))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("kinds %s: %q, want %q", tt.kinds, got, tt.want)
		}
		if ex.Canonical != "http://example.com/canon" {
			t.Errorf("kinds %s: canonical %q (recorded whatever the kinds)", tt.kinds, ex.Canonical)
		}
	}
	k, err := ParseKinds([]string{"a", " IMG "})
	if err != nil || k != KindA|KindImg || k.String() != "a,img" {
		t.Errorf("ParseKinds = %v (%s), %v", k, k, err)
	}
	if k, _ := ParseKinds([]string{"all"}); k != AllKinds {
		t.Errorf("all = %s", k)
	}
	if _, err := ParseKinds([]string{"video"}); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestNofollowLinkRepeatedWithoutNofollow(t *testing.T) {
	ex := extract(t, `<a href="/x" rel="nofollow"><img alt="pic"></a><a href="/x">Text</a>`)
	if len(ex.Links) != 1 || ex.Links[0].NoFollow || ex.Links[0].Anchor != "pic" {
		t.Errorf("%+v: a repeat without rel=nofollow makes the link followable", ex.Links)
	}
}

func TestUnescapeAttr(t *testing.T) {
	tests := map[string]string{
		"q?a=1&amp;b=2":     "q?a=1&b=2",
		"q?a=1&b=2":         "q?a=1&b=2",
		"?x=1&copy=2":       "?x=1&copy=2", // legacy name followed by '=': kept
		"?x=1&notify=1":     "?x=1&notify=1",
		"&copy 2026":        "© 2026",
		"&not;x":            "¬x",
		"&#38;&#x26;&#X26":  "&&&",
		"&bogus;&":          "&bogus;&",
		"a&lt;b&gt;c&quot;": `a<b>c"`,
		"&amp":              "&",
		"&amp0;":            "&amp0;", // found by FuzzLexerVsTokenizer
		"&#38x;&#x26g":      "&x;&g",
		"&semi;&#;&#x;":     ";&#;&#x;",
	}
	for in, want := range tests {
		if got := string(unescapeAttr([]byte(in))); got != want {
			t.Errorf("unescapeAttr(%q) = %q, want %q", in, got, want)
		}
	}
}

// The lexer reads links as golang.org/x/net/html's tokenizer does, on the
// realistic benchmark pages and on tricky fragments.
func TestLexerAgreesWithTokenizer(t *testing.T) {
	pages, _ := benchPages()
	inputs := []string{
		`<a href="/one"<a href=/two>x</b></i><a href="/three" <div> <table><tr><a href=four`,
		`<A HREF='x?a=1&amp;b=2&copy=3&notify=4' REL=nofollow>`, `<a href = "  sp  " >`, `<a href=a=b>`,
		`<!-- <a href=c> --><!--><a href=d><!---><a href=e><!-- x --!><a href=f>`, `<!doctype html><a href=g>`,
		`<script><a href=h></script ><a href=i><style></STYLE><a href=j>`, `<title><a href=k></title><a href=l>`,
		`<a/href=m>`, `<a href=n/>`, `<a =x href=o>`, `<a href="p" href="q">`, `</a href="r"><a href=s>`,
		`<?php echo '<a href=t>' ?><a href=u>`, `<a href="v`, `<textarea><a href=w></textarea>`, `a < b <a href=x>`,
		`<script>x = "</scriptx>"; <a href=y></script><a href=z>`, `<script/><a href=hidden></script><a href=shown>`,
		`<title/><a href=t1></title><a href=t2>`, `<a href=sc/>text</a>`, `<a
href
=
"nl">`,
		// Issue 19: '=' opening an attribute name, then an unterminated
		// quote: the tag ran past the end of input and panicked attrs.
		`<a ==">`, `<a ==">x<a href=after>`, `<a ==''><a href=q1>`, `<a href=b =="c"><a href=z2>`,
		`<a b="c"=" href=d>y">`, `<a b="c"=d href=e>`, `<a href / =f>`, `<a href= >`, `<a x=/ href=g>`,
	}
	for _, p := range pages {
		inputs = append(inputs, string(p))
	}
	for _, in := range inputs {
		want := tokenizerHrefs([]byte(in))
		var got []string
		for _, h := range scanPage([]byte(in), AllKinds).hrefs {
			if h.kind == KindA {
				got = append(got, h.href)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%.80q:\n lexer     %q\n tokenizer %q", in, got, want)
		}
	}
}

// tokenizerHrefs lists the href of every <a> start tag as x/net/html reads it.
func tokenizerHrefs(b []byte) []string {
	var out []string
	z := html.NewTokenizer(bytes.NewReader(b))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, more := z.TagName()
		if string(name) != "a" {
			continue
		}
		for more {
			var k, v []byte
			k, v, more = z.TagAttr()
			if string(k) == "href" {
				out = append(out, string(v))
				break
			}
		}
	}
}

// FuzzLexerVsTokenizer: on any input, the lexer finds the same <a href>
// values as x/net/html's tokenizer, except where knownLexerDifference says
// why not.
func FuzzLexerVsTokenizer(f *testing.F) {
	for _, s := range []string{`<a href=x>`, `<!--<a href=x>-->`, `<script><a href=x></script>`, `<a href="&amp;&copy=1">`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if knownLexerDifference(b) {
			return
		}
		want := tokenizerHrefs(b)
		var got []string
		for _, h := range scanPage(b, KindA).hrefs {
			got = append(got, h.href)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q:\n lexer     %q\n tokenizer %q", b, got, want)
		}
	})
}

// knownLexerDifference reports inputs where the lexer knowingly differs
// from the tokenizer: NUL bytes (the tokenizer replaces them), <plaintext>
// and the script data escape states ("<!--" inside <script>), which are
// rare and obsolete.
func knownLexerDifference(b []byte) bool {
	lower := bytes.ToLower(b)
	return bytes.IndexByte(b, 0) >= 0 || bytes.Contains(lower, []byte("<plaintext")) ||
		(bytes.Contains(lower, []byte("<script")) && bytes.Contains(b, []byte("<!--")))
}
