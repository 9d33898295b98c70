package bus

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The NATS server a crawl runs on. Trawler works with 2.9, but a 2.9 server
// ignores a stream's compression without a word (it does not know the
// setting), so the public parsed stream keeps fewer pages within its byte
// limit than the chart's sizing assumes; and its file store costs more CPU
// a message (docs/deploy.md, "NATS with JetStream").

// The first NATS server version that compresses a stream when asked.
const compressingMajor, compressingMinor = 2, 10

// serverVersion parses a server's version ("2.9.10", "2.10.0-RC.1"); ok is
// false when it is not in that form.
func serverVersion(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// compresses reports whether a server of version v stores a stream
// compressed when asked; a version it cannot read is taken for a current
// one.
func compresses(v string) bool {
	major, minor, ok := serverVersion(v)
	if !ok {
		return true
	}
	return major > compressingMajor || major == compressingMajor && minor >= compressingMinor
}

// streamCompression is what a stream asks of the server at version v:
// want, or nothing from a server that does not know the setting (asking
// would only make every start update a stream that never changes).
func streamCompression(v string, want jetstream.StoreCompression) jetstream.StoreCompression {
	if !compresses(v) {
		return jetstream.NoCompression
	}
	return want
}

// OldServer returns a warning, one line saying what to do, when the server
// nc is connected to predates 2.10, and "" otherwise.
func OldServer(nc *nats.Conn) string { return oldServerWarning(nc.ConnectedServerVersion()) }

func oldServerWarning(v string) string {
	if compresses(v) {
		return ""
	}
	return fmt.Sprintf("NATS server %s predates 2.10: the parsed stream is stored uncompressed (--parsed-max-bytes keeps fewer pages) and each message costs the server more CPU; run NATS 2.10 or later (docs/deploy.md, \"NATS with JetStream\")", v)
}
