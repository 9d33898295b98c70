package warc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchPage is an HTML page of about 16 KB, the discovery web's median:
// markup, links and words drawn from a small vocabulary, as real pages are.
func benchPage() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the crawler fetches pages from hosts and follows links found in every page it parses while honouring robots rules politeness delays and canonical forms of each address")
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>Page</title></head><body>\n")
	for b.Len() < 16<<10 {
		fmt.Fprintf(&b, "<p>")
		for range 20 {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "<a href=\"/section/%d/page-%d.html\">more</a></p>\n", r.IntN(100), r.IntN(1000))
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// BenchmarkCompressRecord is the archive's cost per response record: one
// gzip member of a 16 KB page with its HTTP head, at the default level and
// at the standard library's default, 6.
func BenchmarkCompressRecord(b *testing.B) {
	page := benchPage()
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 16384\r\n\r\n")
	for _, level := range []int{DefaultGzipLevel, 6} {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			var buf bytes.Buffer
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				r := Record{Type: TypeResponse, TargetURI: "http://a.test/", ContentType: "application/http;msgtype=response", Head: head, Payload: page}
				if err := compress(&buf, &r, level); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/record")
		})
	}
}
