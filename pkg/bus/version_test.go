package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A 2.9 server ignores a stream's compression without a word; Trawler asks
// it for none (so the stream is not updated at every start) and warns.
func TestStreamCompressionByServerVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		want    jetstream.StoreCompression
	}{
		{"2.9.10", jetstream.NoCompression},
		{"2.9.25", jetstream.NoCompression},
		{"2.2.0", jetstream.NoCompression},
		{"2.10.0", jetstream.S2Compression},
		{"2.10.0-RC.3", jetstream.S2Compression},
		{"2.15.2", jetstream.S2Compression},
		{"3.0.0", jetstream.S2Compression},
		{"", jetstream.S2Compression},        // unknown: taken for a current server
		{"nightly", jetstream.S2Compression}, // unknown too
	} {
		if got := streamCompression(c.version, jetstream.S2Compression); got != c.want {
			t.Errorf("server %q: compression %v, want %v", c.version, got, c.want)
		}
		if got := streamCompression(c.version, jetstream.NoCompression); got != jetstream.NoCompression {
			t.Errorf("server %q: a stream that asks for none got %v", c.version, got)
		}
	}
}

func TestOldServerWarning(t *testing.T) {
	w := oldServerWarning("2.9.10")
	for _, part := range []string{"2.9.10", "uncompressed", "run NATS 2.10 or later"} {
		if !strings.Contains(w, part) {
			t.Errorf("warning %q: no %q", w, part)
		}
	}
	if strings.Contains(w, "\n") {
		t.Errorf("warning %q: more than one line", w)
	}
	if w := oldServerWarning("2.10.4"); w != "" {
		t.Errorf("2.10.4: warned %q", w)
	}
}

// The embedded server is current: no warning, and the parsed stream is
// created compressed, as asked.
func TestCurrentServerCompressesTheParsedStream(t *testing.T) {
	js, names := embeddedJS(t)
	if w := OldServer(js.Conn()); w != "" {
		t.Fatalf("server %s: warned %q", js.Conn().ConnectedServerVersion(), w)
	}
	topo := Topology{Names: names, Partitions: 1, DedupWindow: time.Minute, FetchAck: 30 * time.Second}
	if c := ensuredParsedCompression(t, js, topo); c != jetstream.S2Compression {
		t.Errorf("parsed stream compression %v on server %s, want s2", c, js.Conn().ConnectedServerVersion())
	}
}

// After an upgrade from 2.9, where the parsed stream was made without
// compression, the services' next start asks the current server for it.
func TestUpgradedServerCompressesTheParsedStreamAgain(t *testing.T) {
	js, names := embeddedJS(t)
	topo := Topology{Names: names, Partitions: 1, DedupWindow: time.Minute, FetchAck: 30 * time.Second}
	ctx := context.Background()
	var parsed jetstream.StreamConfig
	for _, sc := range topo.streams() {
		if sc.Name == names.StreamParsed() {
			parsed = sc
		}
	}
	parsed.Compression = jetstream.NoCompression // as Ensure made it on 2.9
	if _, err := js.CreateStream(ctx, parsed); err != nil {
		t.Fatal(err)
	}
	if c := ensuredParsedCompression(t, js, topo); c != jetstream.S2Compression {
		t.Errorf("parsed stream compression %v after the start on a current server, want s2", c)
	}
}

// ensuredParsedCompression ensures topo, as a service's start does, and
// returns the compression the server reports for the parsed stream.
func ensuredParsedCompression(t *testing.T, js jetstream.JetStream, topo Topology) jetstream.StoreCompression {
	t.Helper()
	ctx := context.Background()
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, topo.Names.StreamParsed())
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config.Compression
}
