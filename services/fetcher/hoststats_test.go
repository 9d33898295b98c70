package fetcher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestHostStatsExportsTheBusiestHosts(t *testing.T) {
	h := newHostStats()
	for i := 0; i < 150; i++ {
		host := fmt.Sprintf("h%03d.example", i)
		for j := 0; j <= i; j++ {
			h.add(host, "2xx", "")
		}
		h.add(host, "timeout", "no response within 1s")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	if n := testutil.CollectAndCount(h); n != 2*maxExportedHosts {
		t.Errorf("exported %d series, want %d (the busiest hosts, two outcomes each)", n, 2*maxExportedHosts)
	}
	want := `trawler_fetcher_host_outcomes_total{host="h149.example",outcome="2xx"} 150`
	var b strings.Builder
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			fmt.Fprintf(&b, "%s %v\n", m.GetLabel(), m.GetCounter().GetValue())
		}
	}
	if !strings.Contains(b.String(), `value:"h149.example"`) || strings.Contains(b.String(), `value:"h000.example"`) {
		t.Errorf("want the busiest host in, the quietest out (%s)", want)
	}
}

func TestHostStatsForgetsQuietHosts(t *testing.T) {
	h := newHostStats()
	for i := 0; i < maxTrackedHosts+10; i++ {
		h.add(fmt.Sprintf("h%d", i), "2xx", "")
	}
	if n := len(h.hosts); n > maxTrackedHosts {
		t.Errorf("tracking %d hosts, want at most %d", n, maxTrackedHosts)
	}
}

// The end-of-crawl summary names the hosts that failed most, with the last
// reason.
func TestTopFailingHosts(t *testing.T) {
	h := newHostStats()
	h.add("ok.example", "2xx", "")
	for range 3 {
		h.add("dead.example", "dns", "lookup dead.example: no such host")
	}
	h.add("slow.example", "2xx", "")
	h.add("slow.example", "timeout", "no response headers within 10s")
	got := h.topFailing(5)
	if len(got) != 2 || got[0].Host != "dead.example" || got[0].Failures != 3 || got[0].LastError != "lookup dead.example: no such host" ||
		got[1].Host != "slow.example" || got[1].Failures != 1 || got[1].Fetches != 2 {
		t.Fatalf("top failing: %+v", got)
	}
	if got := (*hostStats)(nil).topFailing(5); got != nil {
		t.Fatalf("nil stats: %v", got)
	}
}
