// Package topic scores pages and links against a crawl's topic, for topical
// (focused) crawling: term vectors with stop words removed and English
// stemming, cosine similarity, the page relevance A = 4*B + C of the topical
// crawler thesis (B: title against topic, C: body against topic), and two
// link-scoring strategies from Pant, Srinivasan and Menczer, "Crawling the
// Web" (2004): naive best-first and SharkSearch.
package topic

import (
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// maxTermLen drops "words" longer than this (base64 blobs, hashes): they
// never match a topic and would only grow the vectors.
const maxTermLen = 40

// Vector is a term-frequency vector of stemmed terms.
type Vector map[string]float64

// Terms splits text into lower-case words (letters and digits), drops stop
// words, one-letter words and over-long tokens, and stems the rest with the
// Snowball English stemmer.
func Terms(text string) []string {
	var out []string
	eachWord(text, func(w string) { out = append(out, w) })
	return out
}

// NewVector returns the term frequencies of text.
func NewVector(text string) Vector {
	v := Vector{}
	eachWord(text, func(w string) { v[w]++ })
	return v
}

// Norm is the Euclidean length of v.
func (v Vector) Norm() float64 {
	var s float64
	for _, f := range v {
		s += f * f
	}
	return math.Sqrt(s)
}

// Cosine is the cosine similarity of a and b, in [0, 1] for frequency
// vectors; 0 when either is empty.
func Cosine(a, b Vector) float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	var dot float64
	for t, f := range a {
		dot += f * b[t]
	}
	if dot == 0 {
		return 0
	}
	return dot / (a.Norm() * b.Norm())
}

// eachWord calls f with each stemmed, non-stop word of text.
func eachWord(text string, f func(string)) {
	var buf []byte
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := text[start:end]
		start = -1
		if len(w) < 2 || len(w) > maxTermLen {
			return
		}
		buf = appendLower(buf[:0], w)
		if stopWords[string(buf)] {
			return
		}
		f(stem(buf))
	}
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
		} else {
			flush(i)
		}
		i += size
	}
	flush(len(text))
}

func appendLower(dst []byte, w string) []byte {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf {
			return append(dst, strings.ToLower(w)...)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// stems caches the stemmer's answers: words on the Web follow Zipf's law, so
// a small cache answers most lookups and the stemmer (which allocates) runs
// rarely. It stops growing at maxStems entries rather than evicting.
var stems = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

const maxStems = 1 << 17

func stem(lower []byte) string {
	stems.RLock()
	s, ok := stems.m[string(lower)]
	stems.RUnlock()
	if ok {
		return s
	}
	w := string(lower)
	s = english.Stem(w, true)
	stems.Lock()
	if len(stems.m) < maxStems {
		stems.m[w] = s
	}
	stems.Unlock()
	return s
}

// stopWords are common English function words (the SMART/Snowball lists'
// core), lower-case, unstemmed.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren't as at
be because been before being below between both but by can cannot could couldn did didn do does doesn
doing don down during each few for from further had hadn has hasn have haven having he her here hers
herself him himself his how i if in into is isn it its itself just let me more most mustn my myself no
nor not now of off on once only or other ought our ours ourselves out over own same shan she should
shouldn so some such than that the their theirs them themselves then there these they this those
through to too under until up very was wasn we were weren what when where which while who whom why
will with won would wouldn you your yours yourself yourselves also may might must shall us via per
s t ll re ve d m www http https com org net html htm php`) {
		m[w] = true
	}
	return m
}()
