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

// The JSON Schemas in docs/schema are the public contract; this keeps them
// and the Go types in step, field for field.
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
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var inSchema, inType []string
		for k := range s.Properties {
			inSchema = append(inSchema, k)
		}
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			inType = append(inType, name)
			if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && !slices.Contains(s.Required, name) {
				t.Errorf("%s: %q is always present but not required in the schema", file, name)
			}
		}
		sort.Strings(inSchema)
		sort.Strings(inType)
		if !slices.Equal(inSchema, inType) {
			t.Errorf("%s: schema properties %v, Go fields %v", file, inSchema, inType)
		}
	}
}
