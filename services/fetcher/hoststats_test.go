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
			h.add(host, "2xx")
		}
		h.add(host, "timeout")
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
		h.add(fmt.Sprintf("h%d", i), "2xx")
	}
	if n := len(h.hosts); n > maxTrackedHosts {
		t.Errorf("tracking %d hosts, want at most %d", n, maxTrackedHosts)
	}
}
