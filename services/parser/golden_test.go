package parser

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGolden")

// goldenLink is Link with its kind spelled out, for readable golden files.
type goldenLink struct {
	URL      string `json:"url"`
	Kind     string `json:"kind"`
	NoFollow bool   `json:"nofollow,omitempty"`
	Anchor   string `json:"anchor,omitempty"`
	Context  string `json:"context,omitempty"`
}

// TestGolden extracts real-world-shaped pages in testdata/golden and
// compares everything extracted with the .json beside each page (go test
// -run TestGolden -update rewrites them; review the diff).
func TestGolden(t *testing.T) {
	cases := []struct {
		file, contentType string
		headers           map[string]string
		kinds             Kind
	}{
		{"broken-nesting.html", "text/html", nil, AllKinds},
		{"unquoted-attrs.html", "text/html", nil, AllKinds},
		{"robots-meta.html", "text/html", nil, DefaultKinds},
		// Charsets: from the header, from a meta tag, and a BOM that
		// overrides both.
		{"latin1-header.html", "text/html; charset=ISO-8859-1", map[string]string{"Content-Language": "fr, en"}, DefaultKinds},
		{"shiftjis-meta.html", "text/html", nil, DefaultKinds},
		{"utf8-bom.html", "text/html; charset=windows-1251", nil, DefaultKinds},
		{"utf16le-bom.html", "text/html", nil, DefaultKinds},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "golden", c.file))
			if err != nil {
				t.Fatal(err)
			}
			ex, err := Extract(Page{URL: "http://example.com/dir/page.html", Body: body, ContentType: c.contentType, Headers: c.headers}, c.kinds)
			if err != nil {
				t.Fatal(err)
			}
			got := struct {
				Extracted
				Links []goldenLink
			}{Extracted: ex, Links: []goldenLink{}}
			for _, l := range ex.Links {
				got.Links = append(got.Links, goldenLink{l.URL, l.Kind.String(), l.NoFollow, l.Anchor, l.Context})
			}
			out, _ := json.MarshalIndent(got, "", "  ")
			out = append(out, '\n')
			golden := filepath.Join("testdata", "golden", c.file+".json")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("extracted\n%s\nwant (%s)\n%s", out, golden, want)
			}
		})
	}
}

// NoLinkContext changes nothing but the links' context: the same links,
// anchors and text as with it, for every golden page.
func TestExtractWithoutLinkContext(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.html"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden pages: %v, %d files", err, len(files))
	}
	contexts := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		page := Page{URL: "http://example.com/dir/page.html", Body: body, ContentType: "text/html"}
		with, err := Extract(page, AllKinds)
		if err != nil {
			t.Fatal(err)
		}
		page.NoLinkContext = true
		without, err := Extract(page, AllKinds)
		if err != nil {
			t.Fatal(err)
		}
		for i := range with.Links {
			if with.Links[i].Context != "" {
				contexts++
			}
			if without.Links[i].Context != "" {
				t.Errorf("%s: link %s has context %q with NoLinkContext", f, without.Links[i].URL, without.Links[i].Context)
			}
			with.Links[i].Context = ""
		}
		if !reflect.DeepEqual(with, without) {
			t.Errorf("%s: extraction differs beyond the context:\n%+v\n%+v", f, with, without)
		}
	}
	if contexts == 0 {
		t.Fatal("no golden link has a context: the test compares nothing")
	}
}
