package splitter

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/urltrace"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

func TestCrossTraceRecordsOtherPartitionsOnly(t *testing.T) {
	const P = 4
	part := func(u string) int {
		h, _ := urlx.Host(u)
		return urlx.Partition(h, P)
	}
	ct, path, err := OpenCrossTrace(t.TempDir(), P)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]uint64{}
	for page := range 30 {
		src := fmt.Sprintf("http://s%d.example/", page%6)
		var links []messages.Link
		for i := range 12 {
			u := fmt.Sprintf("http://h%d.example/%d", (page+i)%9, i%4)
			links = append(links, messages.Link{URL: u})
			if part(u) != part(src) {
				want[part(src)] = append(want[part(src)], urlx.Fingerprint(u))
			}
		}
		links = append(links, messages.Link{URL: "not a url"})
		if err := ct.Record(src, links); err != nil {
			t.Fatal(err)
		}
	}
	if err := ct.Record("no host", []messages.Link{{URL: "http://x.example/"}}); err != nil {
		t.Fatal(err)
	}
	if err := ct.Close(); err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path)[:6] != "cross-" {
		t.Fatalf("path %s", path)
	}
	total := 0
	for p := range P {
		got, h, torn, err := urltrace.ReadFile(path, p)
		if err != nil || torn || h.Kind != urltrace.Cross || h.Partitions != P {
			t.Fatalf("read: %+v %v %v", h, torn, err)
		}
		if !slices.Equal(got, want[p]) {
			t.Errorf("partition %d: %d fingerprints, want %d", p, len(got), len(want[p]))
		}
		total += len(got)
	}
	if total == 0 {
		t.Fatal("nothing recorded: the test does not exercise cross links")
	}
	var nilTrace *CrossTrace
	if nilTrace.Record("http://a.example/", []messages.Link{{URL: "http://b.example/"}}) != nil || nilTrace.Close() != nil {
		t.Fatal("nil CrossTrace")
	}
}
