package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every setting is documented in docs/configuration.md with its flag and
// environment variable.
func TestEverySettingIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("doc", flag.ContinueOnError)
	var c Config
	c.Register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		env := "TRAWLER_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if !strings.Contains(string(doc), "`--"+f.Name+"`") || !strings.Contains(string(doc), "`"+env+"`") {
			t.Errorf("docs/configuration.md does not document --%s / %s", f.Name, env)
		}
	})
}
