package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
	"github.com/trawlerhq/trawler/internal/linkstream"
)

func writeTrace(t *testing.T, dir string) string {
	t.Helper()
	w, path, err := urltrace.Create(dir, urltrace.Header{Kind: urltrace.Full, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	fps := linkstream.New(linkstream.Options{Seed: 2}).Fingerprints(20_000)
	for i := 0; i < len(fps); i += 100 {
		if err := w.Write(int(fps[i]%4), fps[i:i+100]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCachesim(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir)
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"cachesim", "--trace", path, "--sizes", "2^4..2^12", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if rows := strings.Count(stdout.String(), "\n| 2^"); rows != 9 {
		t.Fatalf("%d size rows:\n%s", rows, stdout.String())
	}
	for _, f := range []string{"table.md", "table.csv", "missrate.svg", "relative.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"cachesim", "--trace", path, "--sizes", "64,4096", "--policies", "clock,min", "--split", "--format", "csv"}, &stdout, &stderr); code != 0 {
		t.Fatalf("split: exit %d: %s", code, stderr.String())
	}
	if lines := strings.Count(stdout.String(), "\n"); lines != 1+2*2 || !strings.Contains(stdout.String(), "split over 4 partitions") {
		t.Fatalf("split csv:\n%s", stdout.String())
	}

	bad := filepath.Join(dir, "bad.urltrace")
	_ = os.WriteFile(bad, []byte("not a trace at all"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"cachesim"}, 2},
		{[]string{"cachesim", "--trace", path, "--split", "--partition", "1"}, 2},
		{[]string{"cachesim", "--trace", path, "--sizes", "2^40"}, 1},
		{[]string{"cachesim", "--trace", path, "--policies", "fifo"}, 1},
		{[]string{"cachesim", "--trace", bad}, 1},
		{[]string{"cachesim", "--trace", filepath.Join(dir, "missing")}, 1},
	} {
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}
