package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
)

// A pages stream whose consumers cannot be listed is said once, in one line
// that names the stream and what to check, and pages keep going as they
// went; a read that works again is said too.
func TestPagesReadersSayWhenTheyCannotRead(t *testing.T) {
	js, names := testbus.Start(t, 1)
	var logs testutil.SyncBuffer
	r := &pagesReaders{js: js, stream: "NO_SUCH_STREAM", parser: names.ConsumerParser(), log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	r.refresh(ctx)
	r.refresh(ctx)
	if n := strings.Count(logs.String(), "cannot list the consumers of the pages stream"); n != 1 {
		t.Fatalf("failure said %d times over two failed reads, want once:\n%s", n, logs.String())
	}
	if r.alone() {
		t.Error("pages handed over before any read worked, want them published")
	}
	r.stream = names.StreamPages()
	r.refresh(ctx)
	if !strings.Contains(logs.String(), "works again") || !r.alone() {
		t.Errorf("after a working read: alone %v, log:\n%s", r.alone(), logs.String())
	}
}
