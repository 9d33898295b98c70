package messages

import (
	"errors"
	"strings"
	"testing"
)

func TestAppendParsedLine(t *testing.T) {
	rel := 2.5
	doc, err := Encode(&Parsed{URL: "https://a.test/?x=1&y=<2>", Status: 200, Title: "A\nB", Outlinks: []string{"https://a.test/b"},
		Text: "line one\nline two", Relevance: &rel})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := AppendParsedLine([]byte("before\n"), doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := "before\n" + string(doc) + "\n"; string(buf) != want {
		t.Errorf("line %q, want %q", buf, want)
	}
	// The line reads back as the document.
	var back Parsed
	if err := Decode([]byte(strings.TrimPrefix(string(buf), "before\n")), &back); err != nil || back.Text != "line one\nline two" || *back.Relevance != rel {
		t.Errorf("read back %+v, %v", back, err)
	}
	// Surrounding space is dropped; a document over several lines is compacted.
	for in, want := range map[string]string{
		" \t{\"v\":1,\"url\":\"x\"}\r\n":          `{"v":1,"url":"x"}`,
		"{\n  \"v\": 1,\n  \"url\": \"a b\"\n}\n": `{"v":1,"url":"a b"}`,
	} {
		got, err := AppendParsedLine(nil, []byte(in))
		if err != nil || string(got) != want+"\n" {
			t.Errorf("AppendParsedLine(%q) = %q, %v; want %q", in, got, err, want+"\n")
		}
	}
	// What is not one JSON object is refused, and buf is left as it was.
	for _, in := range []string{"", "  ", "[1]", `"x"`, "{not json", "{\n\"a\":}", "{}\n{}", "null"} {
		got, err := AppendParsedLine([]byte("kept\n"), []byte(in))
		if !errors.Is(err, ErrNotALine) || string(got) != "kept\n" {
			t.Errorf("AppendParsedLine(%q) = %q, %v; want ErrNotALine and buf unchanged", in, got, err)
		}
	}
}
