//go:build stdjson

package messages

import (
	"bytes"
	"encoding/json"
)

func marshal(v any) ([]byte, error) { return json.Marshal(v) }

func marshalNoHTMLEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
