package urlx

import (
	"fmt"
	"sync"
	"testing"
)

// Samples from RFC 3492 section 7.1 (those without upper-case letters).
var punySamples = []struct{ unicode, ace string }{
	{"ليهمابتكلموشعربي؟", "egbpdaj6bu4bxfgehfvwxn"},
	{"他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"},
	{"他們爲什麽不說中文", "ihqwctvzc91f659drss3x8bo0yb"},
	{"pročprostěnemluvíčesky", "proprostnemluvesky-uyb24dma41a"},
	{"למההםפשוטלאמדבריםעברית", "4dbcagdahymbxekheh6e0a7fei0b"},
	{"なぜみんな日本語を話してくれないのか", "n8jok5ay5dzabd5bym9f0cm5685rrjetr6pdxa"},
	{"почемужеонинеговорятпорусски", "b1abfaaepdrnnbgefbadotcwatmq2g4l"},
	{"porquénopuedensimplementehablarenespañol", "porqunopuedensimplementehablarenespaol-fmd56a"},
	{"ü", "tda"},
	{"☃", "n3h"},
}

func TestPunycode(t *testing.T) {
	for _, s := range punySamples {
		got, err := punyEncode([]rune(s.unicode))
		if err != nil || got != s.ace {
			t.Errorf("encode(%q) = %q, %v; want %q", s.unicode, got, err, s.ace)
		}
		dec, err := punyDecode(s.ace)
		if err != nil || string(dec) != s.unicode {
			t.Errorf("decode(%q) = %q, %v; want %q", s.ace, string(dec), err, s.unicode)
		}
	}
	for _, bad := range []string{"-", "-abc", "99999999999", "zzzzzzzzzzzzzzzzzzzz", "ab$", "é-a"} {
		if dec, err := punyDecode(bad); err == nil {
			t.Errorf("decode(%q) = %q, want an error", bad, string(dec))
		}
	}
}

func TestIDNAHosts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://他们为什么不说中文.example/", "http://xn--ihqwcrb4cv8a8dqg056pqjye.example/"},
		{"http://xn--ihqwcrb4cv8a8dqg056pqjye.example/", "http://xn--ihqwcrb4cv8a8dqg056pqjye.example/"},
		{"http://ПОЧЕМУ.рф/", "http://xn--e1aoedxv.xn--p1ai/"},
		{"http://ｅｘａｍｐｌｅ．ｃｏｍ/", "http://example.com/"},
		{"http://exam\u00adple.com/", "http://example.com/"},
		{"http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"},
	}
	for _, tt := range tests {
		if got, err := Canonicalize(tt.in); got != tt.want || err != nil {
			t.Errorf("Canonicalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{
		"http://xn--tda.xn--Tda.example/", // fine: both lower-cased
	} {
		if _, err := Canonicalize(in); err != nil {
			t.Errorf("Canonicalize(%q): %v", in, err)
		}
	}
	for _, in := range []string{
		"http://xn--a.example/",                       // decodes to ASCII
		"http://xn--wca.example/",                     // decodes to "Ü": not in mapped (lower-case) form
		"http://xn--bcher-2pa.example/",               // "bÜcher", likewise
		"http://\uFFFD.example/",                      // replacement character
		"http://a\u200db.example/",                    // zero width joiner (CONTEXTJ not implemented)
		"http://\U000F0000.example/",                  // private use
		"http://％４１.example/",                         // fullwidth percent
		"http://a\u3000b.example/",                    // ideographic space
		"http://" + string(rune(0x378)) + ".example/", // unassigned
	} {
		if got, err := Canonicalize(in); err == nil {
			t.Errorf("Canonicalize(%q) = %q, want an error", in, got)
		}
	}
}

// The IDNA cache returns what idnaToASCII does, from several goroutines,
// across its resets when full.
func TestIDNACache(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < idnaCacheSize+500; i++ {
				h := fmt.Sprintf("bücher%d.example", (i*7+g)%(idnaCacheSize+100))
				if i%100 == 0 {
					h = "xn--zz" + h // refused, and the refusal cached
				}
				got, gotErr := toASCII(h)
				want, wantErr := idnaToASCII(h)
				if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
					t.Errorf("toASCII(%q) = %q, %v; idnaToASCII %q, %v", h, got, gotErr, want, wantErr)
					return
				}
			}
		}()
	}
	wg.Wait()
}
