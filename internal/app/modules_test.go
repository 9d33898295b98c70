package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/app"
)

// Every target is in the table once; the stateful ones ask for the store,
// and refuse to be built without one; an unknown name lists the known.
func TestModuleTable(t *testing.T) {
	for _, name := range append(append([]string(nil), app.Services...), "archive") {
		m, err := app.Lookup(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := name == "dedup" || name == "frontier"; m.NeedsStore != want {
			t.Errorf("%s: NeedsStore %v, want %v", name, m.NeedsStore, want)
		}
		if m.NeedsStore {
			if _, err := m.New(context.Background(), &app.Deps{}); err == nil || !strings.Contains(err.Error(), "needs a store") {
				t.Errorf("%s built without a store: %v", name, err)
			}
		}
	}
	_, err := app.Lookup("indexer")
	if err == nil || !strings.Contains(err.Error(), `unknown service "indexer"`) || !strings.Contains(err.Error(), "frontier") {
		t.Errorf("unknown module: %v", err)
	}
}
