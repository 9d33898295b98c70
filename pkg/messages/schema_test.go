package messages

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// schemaObject is the part of a JSON Schema object these tests compare.
type schemaObject struct {
	Required   []string                   `json:"required"`
	Properties map[string]json.RawMessage `json:"properties"`
}

// The JSON Schemas in docs/schema are the public contract; this keeps them
// and the Go types in step, field for field, the nested objects (a link,
// a revisit record) included.
func TestSchemasMatchTypes(t *testing.T) {
	for file, v := range map[string]any{
		"discovered": Discovered{}, "new": NewURLs{}, "task": FetchTask{}, "done": FetchDone{},
		"page": Page{}, "parsed": Parsed{}, "deadletter": DeadLetter{},
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", file+".v1.schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			schemaObject
			Defs map[string]schemaObject `json:"$defs"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		compareFields(t, file, s.schemaObject, reflect.TypeOf(v))
		for name, def := range s.Defs {
			switch name {
			case "link":
				compareFields(t, file+" $defs/link", def, reflect.TypeOf(Link{}))
			case "revisit":
				compareFields(t, file+" $defs/revisit", def, reflect.TypeOf(Revisit{}))
			default:
				t.Errorf("%s: $defs/%s has no Go type to compare with", file, name)
			}
		}
		// Every reference names a definition of the same file.
		for _, ref := range strings.Split(string(data), `"$ref": "#/$defs/`)[1:] {
			name, _, _ := strings.Cut(ref, `"`)
			if _, ok := s.Defs[name]; !ok {
				t.Errorf("%s: $ref to #/$defs/%s, which the file does not define", file, name)
			}
		}
	}
}

func compareFields(t *testing.T, what string, s schemaObject, rt reflect.Type) {
	t.Helper()
	var inSchema, inType []string
	for k := range s.Properties {
		inSchema = append(inSchema, k)
	}
	for i := 0; i < rt.NumField(); i++ {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		inType = append(inType, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && !slices.Contains(s.Required, name) {
			t.Errorf("%s: %q is always present but not required in the schema", what, name)
		}
	}
	sort.Strings(inSchema)
	sort.Strings(inType)
	if !slices.Equal(inSchema, inType) {
		t.Errorf("%s: schema properties %v, Go fields %v", what, inSchema, inType)
	}
}
