package logging

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A JSON record is one object per line whose fields are top-level keys a
// collector can index: service and crawl included, values typed.
func TestJSONRecordsCarryFields(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, Options{Format: JSON, Crawl: "news"})
	if err != nil {
		t.Fatal(err)
	}
	svc := log.With("service", "fetcher")
	svc.Info("fetched", "host", "example.org", "status", 200)
	svc.Debug("hidden at info level")
	svc.Warn("line\nbreak", "err", "a \"quoted\" error")

	var recs []map[string]any
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", sc.Text(), err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2 (debug is off): %v", len(recs), recs)
	}
	want := map[string]any{"level": "INFO", "msg": "fetched", "service": "fetcher", "crawl": "news", "host": "example.org", "status": float64(200)}
	for k, v := range want {
		if recs[0][k] != v {
			t.Errorf("field %s = %#v, want %#v (record %v)", k, recs[0][k], v, recs[0])
		}
	}
	if _, ok := recs[0]["time"]; !ok {
		t.Errorf("record has no time: %v", recs[0])
	}
	if recs[1]["msg"] != "line\nbreak" || recs[1]["err"] != `a "quoted" error` {
		t.Errorf("escaping lost data: %v", recs[1])
	}
}

func TestTextIsDefaultAndDebugWorks(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, Options{Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("probe", "host", "example.org")
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "host=example.org") || strings.HasPrefix(out, "{") {
		t.Errorf("text debug record = %q", out)
	}
	if strings.Contains(out, "crawl=") {
		t.Errorf("crawl field without Options.Crawl: %q", out)
	}
}

func TestUnknownFormatIsAnError(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, Options{Format: "xml"}); err == nil || !strings.Contains(err.Error(), "xml") {
		t.Fatalf("err = %v, want one naming the format", err)
	}
}

// go-redis's own log lines come out through our logger, with a level.
func TestRouteLibraries(t *testing.T) {
	var buf bytes.Buffer
	log, _ := New(&buf, Options{Format: JSON})
	redisLogger{log.With("lib", "go-redis")}.Printf(context.Background(), "redis: %s: connection pool: %v\n", "127.0.0.1:1", "dial refused")
	out := buf.String()
	if !strings.Contains(out, `"lib":"go-redis"`) || !strings.Contains(out, `"level":"WARN"`) ||
		!strings.Contains(out, `"msg":"redis: 127.0.0.1:1: connection pool: dial refused"`) {
		t.Fatalf("go-redis line not routed: %s", out)
	}
}
