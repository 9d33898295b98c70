package bus

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

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

// A listen address already taken is said at once, with what to do, not
// after the 30 s wait for a server that only logged it.
func TestEmbeddedListenAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	ns, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(), Listen: ln.Addr().String()})
	if err == nil {
		ns.Shutdown()
		t.Fatalf("started on %s, which another listener holds", ln.Addr())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the error took %v: it waited for readiness", took)
	}
	for _, want := range []string{ln.Addr().String(), "--nats-listen", "address already in use", "choose another address"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
