package app_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/services/archive"
)

// `run --out` and the archive's JSON Lines sink have one writer
// (messages.AppendParsedLine): for the same crawl their lines are the same,
// byte for byte.
func TestOutAndArchiveWriteTheSameLines(t *testing.T) {
	f := newFixture(t)
	cfg := testConfig(t, f.seeds)
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	cfg.Archive = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t)); err != nil {
		t.Fatalf("RunAll: %v", err)
	}
	lines := func(data []byte) []string {
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	data, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	out := lines(data)
	files, _ := filepath.Glob(filepath.Join(cfg.Archive, "*"+archive.JSONLSuffix))
	if open, _ := filepath.Glob(filepath.Join(cfg.Archive, "*"+archive.OpenSuffix)); len(files) == 0 || len(open) != 0 {
		t.Fatalf("archive JSON Lines files %v, open %v", files, open)
	}
	var arch []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		arch = append(arch, lines(data)...)
	}
	slices.Sort(out)
	slices.Sort(arch)
	if len(out) != len(f.expected())+1 { // and the dead host's failed fetch
		t.Errorf("--out has %d lines, want %d", len(out), len(f.expected())+1)
	}
	if !slices.Equal(out, arch) {
		t.Errorf("--out and --archive lines differ:\n--out:\n%s\n--archive:\n%s", strings.Join(out, "\n"), strings.Join(arch, "\n"))
	}
}
