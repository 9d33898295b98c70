package fetcher

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkDecodeGzipPage is the fetcher's cost to decode one gzip-encoded
// 16 KB HTML page, as most servers send text.
func BenchmarkDecodeGzipPage(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the crawler fetches pages from hosts and follows links found in every page it parses while honouring robots rules politeness delays and canonical forms of each address")
	var page strings.Builder
	for page.Len() < 16<<10 {
		for range 20 {
			page.WriteString(words[r.IntN(len(words))])
			page.WriteByte(' ')
		}
		fmt.Fprintf(&page, "<a href=\"/s/%d/p-%d.html\">more</a>\\n", r.IntN(100), r.IntN(1000))
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(page.String()))
	zw.Close()
	h := http.Header{"Content-Encoding": {"gzip"}}
	b.SetBytes(int64(page.Len()))
	b.ReportAllocs()
	for b.Loop() {
		body, _, _ := decodeBody(h, bytes.NewReader(z.Bytes()), 1<<30)
		n, err := io.Copy(io.Discard, body)
		if err != nil || n != int64(page.Len()) {
			b.Fatalf("decoded %d bytes, %v", n, err)
		}
	}
}
