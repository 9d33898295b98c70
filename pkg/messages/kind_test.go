package messages

import (
	"reflect"
	"strings"
	"testing"
)

// Every message survives Encode then Decode (and DecodeKind) unchanged, and
// a message without its version gets Version.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	kindOf := func(m message) string {
		switch m.(type) {
		case *Discovered:
			return KindDiscovered
		case *NewURLs:
			return KindNew
		case *FetchTask:
			return KindTask
		case *FetchDone:
			return KindDone
		case *Page:
			return KindPage
		case *Parsed:
			return KindParsed
		case *DeadLetter:
			return KindDeadLetter
		}
		t.Fatalf("no kind for %T", m)
		return ""
	}
	seen := map[string]bool{}
	for _, m := range samples() {
		kind := kindOf(m)
		seen[kind] = true
		*m.version() = 0 // the publisher leaves it out
		encode := Encode
		if p, ok := m.(*Page); ok {
			encode = func(message) ([]byte, error) { return EncodePage(p) }
		}
		data, err := encode(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if *m.version() != Version {
			t.Errorf("%T: V is %d after encoding, want %d", m, *m.version(), Version)
		}
		back := zeroOf(m)
		if err := Decode(data, back); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		want := normal(m)
		if !reflect.DeepEqual(back, want) {
			t.Errorf("%T: decoded %+v, want %+v", m, back, want)
		}
		byKind, err := DecodeKind(kind, data)
		if err != nil {
			t.Fatalf("DecodeKind(%s): %v", kind, err)
		}
		if !reflect.DeepEqual(byKind, want) {
			t.Errorf("DecodeKind(%s) = %+v, want %+v", kind, byKind, want)
		}
	}
	for _, k := range Kinds {
		if !seen[k] {
			t.Errorf("no sample of kind %s", k)
		}
	}
}

func TestDecodeKindRefuses(t *testing.T) {
	for _, c := range []struct {
		kind, data, err string
	}{
		{"nope", `{"v":1}`, "unknown message kind"},
		{KindParsed, `{"v":2,"url":"x"}`, "version"},
		{KindParsed, `{"url":"x"}`, "version"},
		{KindTask, `{not json`, "decode"},
		{KindPage, ``, "without Trawler-Page header"},
		{KindDiscovered, `{"v":1,"links":"x"}`, "decode"},
	} {
		m, err := DecodeKind(c.kind, []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("DecodeKind(%s, %s) = %v, %v; want an error with %q", c.kind, c.data, m, err, c.err)
		}
	}
	if _, err := EncodePage(&Page{V: 7}); err == nil {
		t.Error("EncodePage of a v7 page succeeded")
	}
}
