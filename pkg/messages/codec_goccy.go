//go:build !stdjson

package messages

import json "github.com/goccy/go-json"

func marshal(v any) ([]byte, error) { return json.Marshal(v) }

func marshalNoHTMLEscape(v any) ([]byte, error) {
	return json.MarshalWithOption(v, json.DisableHTMLEscape())
}

func unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
