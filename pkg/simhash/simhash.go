// Package simhash fingerprints a page's text so that near-duplicate pages get
// fingerprints a few bits apart (Charikar 2002), and finds an earlier
// fingerprint within k bits of a new one (after Manku, Jain and Das Sarma, WWW 2007).
//
// A fingerprint is 64 bits. Features are overlapping word shingles of the
// text (lower-cased letters and digits); each feature's 64-bit hash votes +1
// or -1 per bit, weighted by how often the feature occurs; the fingerprint
// keeps the sign of each bit's sum. A small edit changes few features, so few
// bit sums change sign; unrelated texts differ in about half their bits.
//
// The hash is FNV-1a, written out here so that a fingerprint is the same in
// every process and release: fingerprints are stored and compared across
// services and runs.
package simhash

import (
	"math/bits"
	"unicode"
	"unicode/utf8"
)

// Shingle is the number of consecutive words in one feature. Three words keep
// the fingerprint sensitive to word order (two pages of the same vocabulary
// are not near-duplicates) while one changed word moves only three features.
const Shingle = 3

// DefaultDistance is the Hamming distance at or under which two fingerprints
// are near-duplicates. Manku et al. chose 3 bits for 8 billion pages with
// features weighted by their own scheme; with unweighted 3-word shingles and
// a per-host index, pages with known small edits (a changed date or counter,
// an inserted banner, a removed sentence, a session id) are at 4-10 bits
// while different pages of one site, sharing its navigation and footer, are
// 20 or more apart. On that test set (simhash_test.go, three seeds) 10 bits
// give precision 1.000 and recall 0.990-0.998; 6 bits a recall of 0.87-0.89,
// 3 bits 0.46-0.47.
const DefaultDistance = 10

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Fingerprint returns the SimHash of text. Text with no words fingerprints to
// 0; text with fewer than Shingle words uses its words as one feature.
func Fingerprint(text string) uint64 {
	var f fingerprinter
	return f.sum(text)
}

// Distance is the number of bits in which a and b differ.
func Distance(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// fingerprinter holds the per-call state: w0, w1, w2 are the hashes of the
// last three words, oldest first, so that a shingle's hash is their
// combination.
//
// Counting a feature's 64 bits one by one cost a millisecond per page; the
// counters are instead 8 byte lanes in each of 8 words, lane j of word k
// counting bit 8k+j, added a byte of the hash at a time from a table, and
// spilled into ones before a lane can overflow.
type fingerprinter struct {
	lanes      [8]uint64
	inLanes    int // features counted in lanes since the last spill
	ones       [64]int32
	features   int32
	w0, w1, w2 uint64
	n          int // words seen
}

// spread[b] has lane j set to bit j of b.
var spread = func() (t [256]uint64) {
	for b := range t {
		for j := range 8 {
			if b&(1<<j) != 0 {
				t[b] |= 1 << (8 * j)
			}
		}
	}
	return t
}()

func (f *fingerprinter) sum(text string) uint64 {
	inWord, h := false, uint64(fnvOffset)
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			// ASCII, most of most pages: a table lookup, no decoding.
			if lc := asciiWord[c]; lc != 0 {
				h, inWord = (h^uint64(lc))*fnvPrime, true
			} else if inWord {
				f.word(h)
				inWord, h = false, fnvOffset
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			h, inWord = fnvRune(h, unicode.ToLower(r)), true
		} else if inWord {
			f.word(h)
			inWord, h = false, fnvOffset
		}
	}
	if inWord {
		f.word(h)
	}
	switch f.n {
	case 1: // fewer words than a shingle: they are the one feature
		f.count(mix(f.w2))
	case 2:
		f.count(mix(f.w1 ^ bits.RotateLeft64(f.w2, 21)))
	}
	f.spill()
	var fp uint64
	for b, ones := range f.ones {
		if 2*ones > f.features {
			fp |= 1 << uint(b)
		}
	}
	return fp
}

// word takes the next word's hash and counts the shingle it ends: the last
// three words, each rotated by its place so that "a b c" and "c b a" are
// different features, mixed once.
func (f *fingerprinter) word(h uint64) {
	f.w0, f.w1, f.w2 = f.w1, f.w2, h
	if f.n++; f.n >= Shingle {
		f.count(mix(f.w0 ^ bits.RotateLeft64(f.w1, 21) ^ bits.RotateLeft64(f.w2, 42)))
	}
}

// count adds a feature's bits to the per-bit counts of ones.
func (f *fingerprinter) count(h uint64) {
	l := &f.lanes
	l[0] += spread[byte(h)]
	l[1] += spread[byte(h>>8)]
	l[2] += spread[byte(h>>16)]
	l[3] += spread[byte(h>>24)]
	l[4] += spread[byte(h>>32)]
	l[5] += spread[byte(h>>40)]
	l[6] += spread[byte(h>>48)]
	l[7] += spread[byte(h>>56)]
	f.features++
	if f.inLanes++; f.inLanes == 255 {
		f.spill()
	}
}

func (f *fingerprinter) spill() {
	for k, lane := range f.lanes {
		for j := range 8 {
			f.ones[8*k+j] += int32(byte(lane >> (8 * j)))
		}
		f.lanes[k] = 0
	}
	f.inLanes = 0
}

// asciiWord maps an ASCII letter or digit to itself, lower-cased, and every
// other byte to 0.
var asciiWord = func() (t [utf8.RuneSelf]byte) {
	for c := range t {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			t[c] = byte(c)
		case c >= 'A' && c <= 'Z':
			t[c] = byte(c) + 'a' - 'A'
		}
	}
	return t
}()

func fnvRune(h uint64, r rune) uint64 {
	if r < utf8.RuneSelf {
		h ^= uint64(r)
		return h * fnvPrime
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	for _, c := range buf[:n] {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// mix spreads FNV's weak high bits over the whole word (the finalizer of
// SplitMix64): SimHash needs every bit of a feature's hash to be a fair coin.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
