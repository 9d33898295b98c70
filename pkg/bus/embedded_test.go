package bus

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// The embedded server logs through slog: its start-up notices at debug
// level (a crawl at the default info level shows none of them), and
// nothing of its own on stderr.
func TestEmbeddedServerLogsThroughSlog(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var b syncBuffer
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

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
