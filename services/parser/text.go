package parser

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// textBuf collects visible text with runs of whitespace collapsed to one
// space, up to limit bytes; later text is ignored.
type textBuf struct {
	buf   []byte
	limit int
	space bool // a separator is due before the next word
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// write appends text.
func (t *textBuf) write(text []byte) {
	if len(text) == 0 || len(t.buf) >= t.limit {
		return
	}
	// The common case, prose on one line: a few vectorised scans instead of
	// a look at every byte.
	if bytes.IndexByte(text, '\n') < 0 && bytes.IndexByte(text, '\t') < 0 && bytes.IndexByte(text, '\r') < 0 &&
		bytes.IndexByte(text, '\f') < 0 && bytes.Index(text, doubleSpace) < 0 {
		if text[0] == ' ' {
			t.sep()
			text = text[1:]
		}
		trailing := len(text) > 0 && text[len(text)-1] == ' '
		if trailing {
			text = text[:len(text)-1]
		}
		if len(text) > 0 {
			if t.space {
				t.buf = append(t.buf, ' ')
			}
			t.buf = append(t.buf, text[:min(len(text), max(0, t.limit-len(t.buf)))]...)
			t.space = false
		}
		if trailing {
			t.sep()
		}
		return
	}
	for len(text) > 0 && len(t.buf) < t.limit {
		i := 0
		for i < len(text) && spaceTable[text[i]] {
			i++
		}
		if i > 0 {
			t.space = len(t.buf) > 0
			text = text[i:]
			continue
		}
		for i < len(text) && !spaceTable[text[i]] {
			i++
		}
		if t.space {
			t.buf = append(t.buf, ' ')
			t.space = false
		}
		t.buf = append(t.buf, text[:min(i, t.limit-len(t.buf))]...)
		text = text[i:]
	}
}

var doubleSpace = []byte("  ")

var spaceTable = [256]bool{' ': true, '\t': true, '\n': true, '\f': true, '\r': true}

// writeString appends text given as a string.
func (t *textBuf) writeString(s string) {
	t.sep()
	for i := 0; i < len(s) && len(t.buf) < t.limit; {
		// The common case, without a []byte conversion of all of s.
		j := min(len(s), i+64)
		t.write([]byte(s[i:j]))
		i = j
	}
	t.sep()
}

// sep marks a word boundary (a block element's edge, a <br>).
func (t *textBuf) sep() { t.space = len(t.buf) > 0 }

// Len is the offset the next text will be written at (after any pending
// separator).
func (t *textBuf) Len() int {
	if t.space {
		return len(t.buf) + 1
	}
	return len(t.buf)
}

func (t *textBuf) String() string {
	if utf8.Valid(t.buf) {
		return string(t.buf) // the common case, cheaper than ToValidUTF8
	}
	return capUTF8(strings.ToValidUTF8(string(t.buf), "\uFFFD"), t.limit)
}

// context returns the text from n words before start to n words after end
// (offsets from Len), or "" when start lies beyond what was kept.
func (t *textBuf) context(start, end, n int) string {
	start, end = min(start, len(t.buf)), min(end, len(t.buf))
	if start >= len(t.buf) && start > 0 {
		return ""
	}
	// At most maxContext bytes each side, so that a page of many links in
	// text without spaces costs linear time, not quadratic.
	const maxContext = 256
	a := start
	for words := 0; a > 0 && start-a < maxContext; a-- {
		if t.buf[a-1] == ' ' {
			if words++; words > n {
				break
			}
		}
	}
	b := end
	for words := 0; b < len(t.buf) && b-end < maxContext; b++ {
		if t.buf[b] == ' ' && b > end {
			if words++; words >= n {
				break
			}
		}
	}
	for a < b && !utf8.RuneStart(t.buf[a]) {
		a++
	}
	c := t.buf[a:b]
	if !utf8.Valid(c) {
		return strings.TrimSpace(strings.ToValidUTF8(string(c), "\uFFFD"))
	}
	return strings.TrimSpace(string(c))
}
