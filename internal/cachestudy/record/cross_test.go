package record

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/internal/cachestudy/urltrace"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/urlx"
)

func TestCrossRecordsOtherPartitionsOnly(t *testing.T) {
	const P = 4
	part := func(u string) int {
		h, _ := urlx.Host(u)
		return urlx.Partition(h, P)
	}
	ct, err := OpenCross(t.TempDir(), P, nil)
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
		ct.Links(src, links)
	}
	ct.Links("no host", []messages.Link{{URL: "http://x.example/"}})
	if err := ct.Close(); err != nil || ct.Err() != nil {
		t.Fatal(err, ct.Err())
	}
	if !strings.HasPrefix(filepath.Base(ct.Path()), "cross-") {
		t.Fatalf("path %s", ct.Path())
	}
	total := 0
	for p := range P {
		got, h, torn, err := urltrace.ReadFile(ct.Path(), p)
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
}
