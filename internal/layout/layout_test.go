// Package layout holds the test of the repository's layering: cmd ->
// internal -> services -> pkg, no import running back up, so that a library
// can be used without the configuration tree or the wiring above it; and of
// the cache study's seam: the study's packages (internal/cachestudy/...) are
// imported only by the study itself, the wiring (internal/app) and the
// commands, so the crawl path knows the study only as its observers.
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

// study is the cache study's tree; studyUsers are the only directories
// (with those under them) whose packages may import it.
const study = "internal/cachestudy"

var studyUsers = []string{study, "internal/app", "cmd"}

const root = "../.."

// eachImport calls fn with every import of every non-test Go file under dir
// (relative to the repository's root) and returns the files read.
func eachImport(t *testing.T, dir string, fn func(file, imp string)) int {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, path)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			fn(filepath.ToSlash(rel), p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return checked
}

func TestNoImportRunsBackUp(t *testing.T) {
	checked := 0
	for _, l := range layers {
		checked += eachImport(t, l.dir, func(file, p string) {
			for _, up := range l.denied {
				if strings.HasPrefix(p, module+up) {
					t.Errorf("%s imports %s: %s/ may not import %s", file, p, l.dir, strings.TrimSuffix(up, "/"))
				}
			}
		})
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk did not find the tree", checked)
	}
}

// TestStudyBehindItsSeam: the crawl path (services, pkg, the rest of
// internal) never imports the cache study; internal/app attaches the
// study's recorders as the services' observers.
func TestStudyBehindItsSeam(t *testing.T) {
	under := func(file, dir string) bool { return strings.HasPrefix(file, dir+"/") }
	checked, users := 0, 0
	for _, dir := range []string{"cmd", "internal", "services", "pkg"} {
		checked += eachImport(t, dir, func(file, p string) {
			if p != module+study && !strings.HasPrefix(p, module+study+"/") {
				return
			}
			for _, u := range studyUsers {
				if under(file, u) {
					users++
					return
				}
			}
			t.Errorf("%s imports %s: only %s import the cache study", file, p, strings.Join(studyUsers, ", "))
		})
	}
	if checked < 100 || users == 0 {
		t.Fatalf("checked %d files, %d imports of the study: the walk did not find the tree", checked, users)
	}
}
