//go:build goexperiment.jsonv2

package codecbench

import (
	stdjson "encoding/json"
	stdjsonv2 "encoding/json/v2"
)

// Under GOEXPERIMENT=jsonv2, encoding/json itself runs on the v2 engine;
// encoding/json/v2 with the v1 options writes the same bytes.
func init() {
	codecs = append(codecs[:len(codecs)-1:len(codecs)-1], codec{"encoding-json-v2-v1opts",
		func(v any) ([]byte, error) { return stdjsonv2.Marshal(v, stdjson.DefaultOptionsV1()) },
		func(b []byte, v any) error { return stdjsonv2.Unmarshal(b, v, stdjson.DefaultOptionsV1()) }},
		codecs[len(codecs)-1])
}
