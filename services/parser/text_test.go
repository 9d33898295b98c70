package parser

import (
	"math/rand"
	"strings"
	"testing"
)

// The fast path of textBuf.write and its byte-by-byte loop agree with a
// plain reference: fields joined by single spaces.
func TestTextBufCollapsesWhitespace(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	pieces := []string{"a", "bc", " ", "  ", "\n", "\t", "word", "é", "\r\n", " x "}
	for i := 0; i < 2000; i++ {
		var chunks []string
		for n := rng.Intn(6); n >= 0; n-- {
			var b strings.Builder
			for m := rng.Intn(5); m >= 0; m-- {
				b.WriteString(pieces[rng.Intn(len(pieces))])
			}
			chunks = append(chunks, b.String())
		}
		tb := textBuf{limit: 1 << 20}
		for _, c := range chunks {
			tb.write([]byte(c))
		}
		if want := strings.Join(strings.Fields(strings.Join(chunks, "")), " "); tb.String() != want {
			t.Fatalf("chunks %q: got %q, want %q", chunks, tb.String(), want)
		}
	}
	tb := textBuf{limit: 5}
	tb.write([]byte("abc def ghi"))
	tb.write([]byte("more"))
	if tb.String() != "abc d" {
		t.Errorf("capped: %q", tb.String())
	}
}
