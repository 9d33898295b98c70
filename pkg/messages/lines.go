package messages

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrNotALine is returned by AppendParsedLine for data that is not one JSON
// object.
var ErrNotALine = errors.New("parsed document is not a JSON object")

// AppendParsedLine appends the JSON Lines line of a pages.parsed message to
// buf: the Parsed document as the parser published it (Encode's bytes: one
// JSON object, no newline), then "\n". It is the one line format of
// Trawler's JSON Lines writers, `trawler run --out` and the archive's JSON
// Lines sink (docs/archive.md).
//
// The document is copied, not decoded and encoded again: that was most of
// the --out writer's CPU, and a copy keeps the fields of a newer writer. So
// a document on one line is trusted to be JSON; a caller that must know
// decodes it first (the archive does, to dead-letter what is not a Parsed
// document). A document spread over several lines is compacted onto one,
// which checks it. What is not one JSON object is refused (ErrNotALine) and
// buf returned as it was.
func AppendParsedLine(buf, data []byte) ([]byte, error) {
	data = bytes.TrimSpace(data)
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return buf, ErrNotALine
	}
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return append(append(buf, data...), '\n'), nil
	}
	b := bytes.NewBuffer(buf)
	if err := json.Compact(b, data); err != nil {
		return buf, errors.Join(ErrNotALine, err)
	}
	return append(b.Bytes(), '\n'), nil
}
