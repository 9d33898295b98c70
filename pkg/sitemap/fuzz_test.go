package sitemap

import (
	"bytes"
	"strings"
	"testing"
)

// Sitemaps come from the web: whatever the bytes, Parse returns (never
// panics), stays within its limits, and gives only entries with a location.
func FuzzParse(f *testing.F) {
	f.Add([]byte(urlset))
	f.Add([]byte(`<sitemapindex><sitemap><loc>https://a/s.xml</loc></sitemap></sitemapindex>`))
	f.Add([]byte("https://a/1\nhttps://a/2\n"))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"))
	f.Add([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>x</loc><lastmod>2024-13-45</lastmod><priority>NaN</priority></url></urlset>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		_, _ = Parse(bytes.NewReader(data), Limits{MaxURLs: 100, MaxBytes: 1 << 16}, func(e Entry) error {
			n++
			if strings.TrimSpace(e.Loc) == "" {
				t.Errorf("entry without a location: %+v", e)
			}
			if e.Priority != -1 && (e.Priority < 0 || e.Priority > 1) {
				t.Errorf("priority %v out of range", e.Priority)
			}
			return nil
		})
		if n > 100 {
			t.Errorf("%d entries past MaxURLs 100", n)
		}
	})
}
