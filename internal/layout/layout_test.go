// Package layout holds the test of the repository's layering: cmd ->
// internal -> services -> pkg, no import running back up, so that a library
// can be used without the configuration tree or the wiring above it.
package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/trawlerhq/trawler/"

// layers: a package in the first may not import one in the others
// (tests excepted: an end-to-end test may drive the whole binary).
var layers = []struct {
	dir    string
	denied []string
}{
	{"pkg", []string{"services/", "internal/", "cmd/"}},
	{"services", []string{"internal/", "cmd/"}},
	{"internal", []string{"cmd/"}},
}

func TestNoImportRunsBackUp(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	for _, l := range layers {
		err := filepath.WalkDir(filepath.Join(root, l.dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, up := range l.denied {
					if strings.HasPrefix(p, module+up) {
						rel, _ := filepath.Rel(root, path)
						t.Errorf("%s imports %s: %s/ may not import %s", rel, p, l.dir, strings.TrimSuffix(up, "/"))
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk did not find the tree", checked)
	}
}
