package cache

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteStatic(t *testing.T) {
	counts := map[uint64]int{0xb: 5, 0xa: 5, 0x1: 9, 0xffffffffffffffff: 1, 0: 3}
	var buf bytes.Buffer
	if err := WriteStatic(&buf, counts, 4); err != nil {
		t.Fatal(err)
	}
	want := `# trawler static URL cache: 4 fingerprints, most frequent first
0000000000000001 # 9
000000000000000a # 5
000000000000000b # 5
0000000000000000 # 3
`
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := WriteStatic(&buf, counts, 0); err != nil || strings.Count(buf.String(), "\n") != 6 {
		t.Fatalf("size 0 should write all 5: %q, %v", buf.String(), err)
	}
}

func TestLoadStatic(t *testing.T) {
	file := `# comment line

0000000000000001 # 9
  000000000000000A  
000000000000000a # a repeat does not count towards size
fedcba9876543210
0000000000000002
`
	c, err := LoadStatic(strings.NewReader(file), 3)
	if err != nil {
		t.Fatal(err)
	}
	for fp, want := range map[uint64]bool{1: true, 0xa: true, 0xfedcba9876543210: true, 2: false} {
		if contains(c, fp) != want {
			t.Errorf("contains(%#x) = %v, want %v", fp, !want, want)
		}
	}
	if c.Len() != 3 {
		t.Errorf("len %d, want 3", c.Len())
	}
	if c, err := LoadStatic(strings.NewReader(file), 100); err != nil || c.Len() != 4 {
		t.Errorf("a short file gives what it has: len %d, %v", c.Len(), err)
	}
}

func TestLoadStaticErrors(t *testing.T) {
	for _, bad := range []string{"123", "00000000000000001", "000000000000000g", "+000000000000001", "0x00000000000001", "00000000 00000001"} {
		_, err := LoadStatic(strings.NewReader("# ok\n"+bad+"\n"), 10)
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: err = %v, want a line 2 error", bad, err)
		}
	}
	if _, err := LoadStatic(strings.NewReader(""), 0); err == nil {
		t.Error("size 0 accepted")
	}
	// Lines past the first size fingerprints are not read.
	if _, err := LoadStatic(strings.NewReader("0000000000000001\nnot hex\n"), 1); err != nil {
		t.Errorf("read past size: %v", err)
	}
}

func TestStaticRoundTrip(t *testing.T) {
	counts := map[uint64]int{}
	for _, fp := range stream(5, 50_000, 5000) {
		counts[fp]++
	}
	var buf bytes.Buffer
	if err := WriteStatic(&buf, counts, 1000); err != nil {
		t.Fatal(err)
	}
	c, err := LoadStatic(&buf, 1000)
	if err != nil {
		t.Fatal(err)
	}
	top := topK(counts, 1000)
	for _, fp := range top {
		if !contains(c, fp) {
			t.Fatalf("%#x (count %d) missing", fp, counts[fp])
		}
	}
	// Nothing outside the top 1000 is more frequent than its last member.
	for fp, n := range counts {
		if !contains(c, fp) && n > counts[top[len(top)-1]] {
			t.Fatalf("%#x (count %d) left out", fp, n)
		}
	}
}
