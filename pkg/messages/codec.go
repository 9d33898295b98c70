package messages

import "fmt"

// The wire format stays JSON (docs/subjects.md, "Wire format"): what changed
// is the codec. github.com/goccy/go-json (codec_goccy.go) writes byte for
// byte what encoding/json writes for these types (omitempty, omitzero,
// time.Time, time.Duration, HTML escaping, map key order) and decodes what
// encoding/json decodes, about three times faster per page; codec_test.go
// holds it to that. Built with -tags stdjson, Trawler uses encoding/json
// (codec_std.go): the same wire, for a rollback without a protocol change.

// message is implemented by every message type: its schema version.
type message interface{ version() int }

// Encode marshals a message as JSON, the bytes encoding/json.Marshal writes.
// It refuses a message whose V is not Version: every message carries its
// version.
func Encode(v message) ([]byte, error) {
	if got := v.version(); got != Version {
		return nil, fmt.Errorf("encode %T: schema version %d (want %d)", v, got, Version)
	}
	data, err := marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return data, nil
}

// EncodePage marshals a page's metadata for its Trawler-Page header: JSON
// without HTML escaping (the same JSON to a reader), so that a URL's "&"
// takes one byte of the header, not six. The bytes are those of an
// encoding/json Encoder with SetEscapeHTML(false), without its newline.
func EncodePage(p *Page) ([]byte, error) {
	if p.V != Version {
		return nil, fmt.Errorf("encode %T: schema version %d (want %d)", p, p.V, Version)
	}
	data, err := marshalNoHTMLEscape(p)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", p, err)
	}
	return data, nil
}

// Decode unmarshals a JSON message and checks its version: a reader ignores
// fields it does not know and refuses a version it does not know.
func Decode(data []byte, v message) error {
	if err := unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	if got := v.version(); got != Version {
		return fmt.Errorf("decode %T: unsupported schema version %d (want %d)", v, got, Version)
	}
	return nil
}
