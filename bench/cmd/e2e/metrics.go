package main

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fsync counters a Trawler process exposes on /metrics (--metrics-addr):
// the embedded store's commits (each a bbolt transaction, two fdatasyncs)
// and the --out file's checkpoints (each an fsync of the file, of its
// checkpoint and of the directory). A binary without one of them reports
// it as missing, and the report says n/a.
var fsyncCounters = []string{"trawler_store_commits_total", "trawler_out_checkpoints_total"}

// scraper polls a /metrics endpoint until stopped and keeps the last value
// of each counter it was asked for.
type scraper struct {
	mu   sync.Mutex
	last map[string]float64
	stop chan struct{}
	done chan struct{}
}

// freeAddr is a loopback address with a port nobody listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// scrapeMetrics polls http://addr/metrics every interval. A process's last
// increments after the final poll are lost: the poll interval bounds them.
func scrapeMetrics(addr string, names []string, every time.Duration) *scraper {
	s := &scraper{last: map[string]float64{}, stop: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: every}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			resp, err := client.Get("http://" + addr + "/metrics")
			if err != nil {
				continue
			}
			got := parseCounters(bufio.NewScanner(resp.Body), names)
			resp.Body.Close()
			s.mu.Lock()
			for k, v := range got {
				s.last[k] = max(s.last[k], v)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// parseCounters reads the unlabelled samples of names from Prometheus text.
func parseCounters(sc *bufio.Scanner, names []string) map[string]float64 {
	out := map[string]float64{}
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			continue
		}
		name, val, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		for _, n := range names {
			if name == n {
				if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					out[n] = v
				}
			}
		}
	}
	return out
}

// finish stops polling and returns the last values seen.
func (s *scraper) finish() map[string]float64 {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
