package bus

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/testutil"
)

// The embedded server logs through slog: its start-up notices at debug
// level (a crawl at the default info level shows none of them), and
// nothing of its own on stderr.
func TestEmbeddedServerLogsThroughSlog(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var b testutil.SyncBuffer
		ns, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(),
			Log: slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: level})).With("lib", "nats-server")})
		if err != nil {
			t.Fatal(err)
		}
		ns.Shutdown()
		ns.WaitForShutdown()
		got := b.String()
		switch {
		case level == slog.LevelDebug && (!strings.Contains(got, "Starting nats-server") || !strings.Contains(got, "lib=nats-server")):
			t.Errorf("debug level: server notices missing:\n%s", got)
		case level == slog.LevelInfo && got != "":
			t.Errorf("info level: server notices shown:\n%s", got)
		}
	}
}
