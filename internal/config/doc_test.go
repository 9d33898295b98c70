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

// No flag's help has backquotes: the flag package would take the quoted
// words for the argument's name ("--trace-dir trawler cachesim").
func TestFlagHelpHasNoBackquotes(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var c Config
	c.Register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if strings.Contains(f.Usage, "`") {
			t.Errorf("--%s: help has backquotes: %q", f.Name, f.Usage)
		}
	})
}

// The reference's tables have no blank line inside them (Markdown would
// end the table there and print the rest as text).
func TestConfigurationTablesAreWhole(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i := 1; i+1 < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" && strings.HasPrefix(lines[i-1], "|") && strings.HasPrefix(lines[i+1], "| `") {
			t.Errorf("docs/configuration.md:%d: a blank line splits a table", i+1)
		}
	}
}
