package codecbench

import (
	stdjson "encoding/json"
	"reflect"
	"testing"

	"github.com/bytedance/sonic"
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	gojson "github.com/goccy/go-json"
	segjson "github.com/segmentio/encoding/json"
)

type codec struct {
	name string
	enc  func(any) ([]byte, error)
	dec  func([]byte, any) error
}

var codecs = []codec{
	{"encoding-json", stdjson.Marshal, stdjson.Unmarshal},
	{"goccy-go-json", gojson.Marshal, gojson.Unmarshal},
	{"segmentio-json", segjson.Marshal, segjson.Unmarshal},
	{"sonic-std", sonic.ConfigStd.Marshal, sonic.ConfigStd.Unmarshal},
	{"sonic-default", sonic.ConfigDefault.Marshal, sonic.ConfigDefault.Unmarshal},
	{"json-experiment-v1opts",
		func(v any) ([]byte, error) { return jsonv2.Marshal(v, jsonv1.DefaultOptionsV1()) },
		func(b []byte, v any) error { return jsonv2.Unmarshal(b, v, jsonv1.DefaultOptionsV1()) }},
	{"protobuf", PBMarshal, PBUnmarshal},
}

// TestRoundTrip: every codec gives back what went in, so the figures compare
// codecs that do the same job.
func TestRoundTrip(t *testing.T) {
	m := NewMix()
	for _, c := range codecs {
		out := Fresh()
		for i, v := range m.Values() {
			data, err := c.enc(v)
			if err != nil {
				t.Errorf("%s: encode %T: %v", c.name, v, err)
				continue
			}
			if err := c.dec(data, out[i]); err != nil {
				t.Errorf("%s: decode %T: %v", c.name, v, err)
				continue
			}
			if !reflect.DeepEqual(v, out[i]) {
				t.Errorf("%s: %T round trip:\n got %+v\nwant %+v", c.name, v, out[i], v)
			}
		}
	}
}

// TestSameJSON: which JSON codecs write byte for byte what encoding/json writes.
func TestSameJSON(t *testing.T) {
	m := NewMix()
	for _, c := range codecs[1 : len(codecs)-1] {
		for _, v := range m.Values() {
			want, _ := stdjson.Marshal(v)
			got, _ := c.enc(v)
			if string(got) != string(want) {
				t.Logf("%s: %T differs from encoding/json:\n got %s\nwant %s", c.name, v, got, want)
			}
		}
	}
}

// BenchmarkMix encodes and decodes one page's messages per op; wireB/page is
// the bytes they take on the wire.
func BenchmarkMix(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			m := NewMix()
			vals := m.Values()
			wire := 0
			for _, v := range vals {
				data, err := c.enc(v)
				if err != nil {
					b.Fatal(err)
				}
				wire += len(data)
			}
			loop(b, func() {
				out := Fresh()
				for i, v := range vals {
					data, _ := c.enc(v)
					if err := c.dec(data, out[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(wire), "wireB/page")
		})
	}
}

// BenchmarkEncode and BenchmarkDecode split the mix's cost in two.
func BenchmarkEncode(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			m := NewMix()
			vals := m.Values()
			loop(b, func() {
				for _, v := range vals {
					if _, err := c.enc(v); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			m := NewMix()
			var data [][]byte
			for _, v := range m.Values() {
				d, _ := c.enc(v)
				data = append(data, d)
			}
			loop(b, func() {
				out := Fresh()
				for i, d := range data {
					if err := c.dec(d, out[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// TestMixSize: the mix is pkg/messages/codec_bench_test.go's (mixWireBytes).
func TestMixSize(t *testing.T) {
	m := NewMix()
	n := 0
	for _, v := range m.Values() {
		data, _ := stdjson.Marshal(v)
		n += len(data)
	}
	if n != 11626 {
		t.Errorf("the mix is %d bytes of JSON, want 11626 as in pkg/messages", n)
	}
}
