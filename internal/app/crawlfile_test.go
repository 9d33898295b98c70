package app

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/config"
)

func TestRunPartitionsAreTheDataDirs(t *testing.T) {
	settle := func(dir string, n int, set bool) (int, error) {
		return settleRunPartitions(config.Config{DataDir: dir, PartitionCount: n, PartitionCountSet: set})
	}
	fresh := filepath.Join(t.TempDir(), "new")
	if n, err := settle(fresh, 32, false); err != nil || n != RunPartitions {
		t.Fatalf("new data dir: %d, %v; want %d", n, err, RunPartitions)
	}
	if n, err := settle(fresh, 32, false); err != nil || n != RunPartitions {
		t.Fatalf("resumed: %d, %v; want the recorded %d", n, err, RunPartitions)
	}
	if n, err := settle(fresh, RunPartitions, true); err != nil || n != RunPartitions {
		t.Fatalf("resumed with the same count given: %d, %v", n, err)
	}
	_, err := settle(fresh, 16, true)
	if err == nil || !strings.Contains(err.Error(), "was started with 4") || !strings.Contains(err.Error(), "drop the flag") {
		t.Fatalf("a differing --partition-count: %v", err)
	}

	chosen := filepath.Join(t.TempDir(), "chosen")
	if n, err := settle(chosen, 16, true); err != nil || n != 16 {
		t.Fatalf("new data dir with --partition-count 16: %d, %v", n, err)
	}

	legacy := t.TempDir() // a crawl begun before crawl.json: its store exists
	if err := os.WriteFile(filepath.Join(legacy, "store.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := settle(legacy, 32, false); err != nil || n != legacyPartitions {
		t.Fatalf("legacy data dir: %d, %v; want %d", n, err, legacyPartitions)
	}

	damaged := t.TempDir()
	if err := os.WriteFile(filepath.Join(damaged, "crawl.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := settle(damaged, 32, false); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged crawl.json: %v", err)
	}
}

func TestPartitionCountSetFromEveryOrigin(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		want bool
	}{
		{nil, "", false},
		{[]string{"--partition-count", "8"}, "", true},
		{nil, "8", true},
	} {
		t.Setenv("TRAWLER_PARTITION_COUNT", c.env)
		if c.env == "" {
			os.Unsetenv("TRAWLER_PARTITION_COUNT")
		}
		var cfg config.Config
		if err := cfg.Parse(flag.NewFlagSet("test", flag.ContinueOnError), c.args); err != nil {
			t.Fatal(err)
		}
		if cfg.PartitionCountSet != c.want {
			t.Errorf("args %q env %q: PartitionCountSet %v", c.args, c.env, cfg.PartitionCountSet)
		}
	}
}
