package simhash

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Fingerprints are stored and compared across processes and releases: a
// change to the features or the hash must show here, not in a crawl that
// stops finding its old near-duplicates.
func TestFingerprintIsStable(t *testing.T) {
	for _, c := range []struct {
		text string
		want uint64
	}{
		{"", 0},
		{"  ,.;  ", 0},
		{"hello", 0x16fe05a1c75bcd0f},
		{"the quick brown fox jumps over the lazy dog", 0x32b220bcb32617ec},
	} {
		if got := Fingerprint(c.text); got != c.want {
			t.Errorf("Fingerprint(%q) = %#x, want %#x", c.text, got, c.want)
		}
	}
}

func TestFingerprintIgnoresCaseAndPunctuation(t *testing.T) {
	a := Fingerprint("The quick brown fox -- jumps over the lazy dog!")
	b := Fingerprint("the QUICK brown fox jumps, over the lazy dog")
	if a != b {
		t.Errorf("case and punctuation changed the fingerprint: %#x vs %#x", a, b)
	}
	if Fingerprint("Ünïcode wörds ß") != Fingerprint("ünïcode WÖRDS ß") {
		t.Error("non-ASCII letters are not folded")
	}
	// Word order is part of the features.
	if Fingerprint("alpha beta gamma delta epsilon") == Fingerprint("epsilon delta gamma beta alpha") {
		t.Error("reversed text fingerprints the same")
	}
}

func TestDistance(t *testing.T) {
	if d := Distance(0, ^uint64(0)); d != 64 {
		t.Errorf("Distance(0, all ones) = %d", d)
	}
	if d := Distance(0b1011, 0b0001); d != 2 {
		t.Errorf("Distance = %d, want 2", d)
	}
}

// The bar: precision and recall of at least 0.95 at the default
// distance, on pages with known edits. Each site has its own navigation and
// footer shared by all its pages (the hard negatives: different pages that
// share much text), and every page has four edited copies (the positives).
// The seeds differ from the one DefaultDistance was chosen on.
func TestPrecisionAndRecallOnKnownEdits(t *testing.T) {
	for _, seed := range []uint64{3, 4, 5} {
		docs := knownEdits(rand.New(rand.NewPCG(seed, 7)))
		fps := make([]uint64, len(docs))
		for i, d := range docs {
			fps[i] = Fingerprint(d.text)
		}
		var tp, fp, fn int
		for i := range docs {
			for j := i + 1; j < len(docs); j++ {
				same := docs[i].original == docs[j].original
				near := Distance(fps[i], fps[j]) <= DefaultDistance
				switch {
				case same && near:
					tp++
				case near:
					fp++
				case same:
					fn++
				}
			}
		}
		precision := float64(tp) / float64(tp+fp)
		recall := float64(tp) / float64(tp+fn)
		t.Logf("seed %d: %d pages, precision %.3f recall %.3f (tp %d, fp %d, fn %d)", seed, len(docs), precision, recall, tp, fp, fn)
		if precision < 0.95 || recall < 0.95 {
			t.Errorf("seed %d: precision %.3f, recall %.3f at distance %d: want both >= 0.95", seed, precision, recall, DefaultDistance)
		}
	}
}

type editedPage struct {
	original int
	text     string
}

// knownEdits builds 10 sites x 20 pages, each page followed by four copies
// with one kind of edit each.
func knownEdits(r *rand.Rand) []editedPage {
	vocab := make([]string, 8000)
	for i := range vocab {
		b := make([]byte, 2+r.IntN(8))
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(b)
	}
	// Cubing a uniform draw gives a skewed word frequency, as in prose:
	// a few words on every page, most words rare.
	word := func() string { x := r.Float64(); return vocab[int(float64(len(vocab))*x*x*x)] }
	words := func(n int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = word()
		}
		return w
	}
	var pages []editedPage
	for site := range 10 {
		nav, footer := words(30+r.IntN(150)), words(20+r.IntN(60))
		page := func(body []string) string {
			return strings.Join(nav, " ") + " " + strings.Join(body, " ") + " " + strings.Join(footer, " ")
		}
		for p := range 20 {
			original := site*100 + p
			body := words(150 + r.IntN(800))
			pages = append(pages, editedPage{original, page(body)})
			for edit := range 4 {
				e := append([]string(nil), body...)
				switch edit {
				case 0: // a date, a counter, a price changed
					for range 3 {
						e[r.IntN(len(e))] = fmt.Sprint(r.IntN(100000))
					}
				case 1: // a banner inserted
					at := r.IntN(len(e))
					e = append(e[:at], append(words(12), e[at:]...)...)
				case 2: // a sentence removed
					at := r.IntN(len(e) - 12)
					e = append(e[:at], e[at+12:]...)
				case 3: // a session id appended and two words changed
					e = append(e, fmt.Sprintf("sid%d", r.Int64()))
					e[r.IntN(len(e))], e[r.IntN(len(e))] = word(), word()
				}
				pages = append(pages, editedPage{original, page(e)})
			}
		}
	}
	return pages
}

func BenchmarkFingerprint(b *testing.B) {
	text := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 300) // ~17 KB
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Fingerprint(text)
	}
}

// Short words, as in the benchmark web's text: more shingles per byte.
func BenchmarkFingerprintShortWords(b *testing.B) {
	syll := []string{"ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu", "na", "pe"}
	var sb strings.Builder
	for i := 0; sb.Len() < 9200; i++ {
		sb.WriteString(syll[i*7%len(syll)])
		if i%3 != 0 {
			sb.WriteString(syll[i*5%len(syll)])
		}
		sb.WriteByte(' ')
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Fingerprint(text)
	}
}
