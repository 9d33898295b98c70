//go:build !stdjson

package store

import json "github.com/goccy/go-json"

// The store's entries are JSON (queued URLs, tasks in flight, revisits),
// read by the Redis store's Lua scripts too. github.com/goccy/go-json, the
// bus messages' codec (pkg/messages), writes for them the bytes
// encoding/json writes (codec_test.go) at less CPU: the Bolt store's
// decode of tasks in flight was 2-3 % of trawler run's. Built with -tags
// stdjson, encoding/json (codec_std.go).

func marshal(v any) ([]byte, error) { return json.Marshal(v) }

func unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
