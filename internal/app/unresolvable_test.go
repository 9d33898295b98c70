package app_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/testsite"
)

// nxdomainServer answers every DNS query on a loopback UDP port with
// NXDOMAIN and counts the queries: the crawl's resolver is pointed at it
// (--dns-servers), so no test depends on, or reaches, real DNS.
func nxdomainServer(t *testing.T) (addr string, queries *atomic.Int64) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	queries = new(atomic.Int64)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			hdr, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			queries.Add(1)
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true,
				RecursionDesired: hdr.RecursionDesired, RecursionAvailable: true, RCode: dnsmessage.RCodeNameError})
			if b.StartQuestions() != nil || b.Question(q) != nil {
				continue
			}
			if out, err := b.Finish(); err == nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().String(), queries
}

// A host whose name does not resolve (NXDOMAIN from the crawl's own
// resolver) ends every queued URL as failed, with the reason, at once: its
// robots.txt is given up on the first answer and its queue then drains at the
// pace of the frontier's loop, not one URL per --politeness-delay (1 s, the
// default, here), so the crawl ends within seconds.
func TestUnresolvableHostEndsItsURLs(t *testing.T) {
	s := testsite.New()
	live := s.AddHost(t, "live", "127.0.2.21")
	live.Set("/", testsite.Page{Links: []string{live.URL("/a")}})
	live.Set("/a", testsite.Page{})

	const n = 40
	seeds := []string{live.URL("/")}
	for i := range n {
		seeds = append(seeds, fmt.Sprintf("http://nowhere.test/p%d", i))
	}
	dnsAddr, queries := nxdomainServer(t)
	cfg := testConfig(t, seeds)
	cfg.Resolver, cfg.DNSServers = "trawler", []string{dnsAddr}
	cfg.PolitenessDelay = time.Second // the default
	cfg.RobotsRetry = 30 * time.Second
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	// Live: robots.txt, /, a gap of 1 s, /a. Before the fix the 40 URLs of
	// nowhere.test took a second each.
	if elapsed > 15*time.Second {
		t.Errorf("crawl took %v; want the unresolvable host's %d URLs ended within seconds", elapsed, n)
	}
	if queries.Load() == 0 {
		t.Fatal("the local DNS server was never asked: the test did not exercise the resolver")
	}
	recs := readOut(t, cfg.Out)
	for i := range n {
		u := fmt.Sprintf("http://nowhere.test/p%d", i)
		rec := recs[u]
		if rec == nil {
			t.Errorf("%s: no record", u)
			continue
		}
		msg, _ := rec["error"].(string)
		if rec["status"] != float64(0) || !strings.Contains(msg, "robots.txt unreachable (lookup nowhere.test: no such host)") {
			t.Errorf("%s: status %v, error %q; want 0, robots.txt unreachable, no such host", u, rec["status"], msg)
		}
	}
	if rec := recs[live.URL("/a")]; rec == nil || rec["status"] != float64(200) {
		t.Errorf("live host's page: %v", rec)
	}
	if got := sum.Counters[`trawler_fetcher_failures_total{kind="robots"}`]; got != n {
		t.Errorf("failures of kind robots = %v, want %d", got, n)
	}
	if got := sum.Counters["trawler_fetcher_robots_given_up_hosts_total"]; got != 1 {
		t.Errorf("robots given-up hosts = %v, want 1", got)
	}
	t.Logf("%d URLs of an unresolvable host and a live host of 2 pages: %v", n, elapsed.Round(time.Millisecond))
}

// With --ignore-robots no robots.txt gives an unresolvable host up: each of
// its URLs is fetched and fails. The fetcher's done report says the name
// does not exist (no_such_host), so the frontier neither rests the host nor
// backs it off between them: the queue ends at the loop's pace, every URL
// with its record (status 0, kind dns), where failure backoff used to hold
// each one up to the 30 s max gap (about 18 minutes for these 40).
func TestUnresolvableHostEndsItsURLsWithoutRobots(t *testing.T) {
	s := testsite.New()
	live := s.AddHost(t, "live", "127.0.2.22")
	live.Set("/", testsite.Page{Links: []string{live.URL("/a")}})
	live.Set("/a", testsite.Page{})

	const n = 40
	seeds := []string{live.URL("/")}
	for i := range n {
		seeds = append(seeds, fmt.Sprintf("http://nowhere.test/p%d", i))
	}
	dnsAddr, queries := nxdomainServer(t)
	cfg := testConfig(t, seeds)
	cfg.Resolver, cfg.DNSServers = "trawler", []string{dnsAddr}
	cfg.IgnoreRobots = true
	cfg.PolitenessDelay = time.Second // the default
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	// Far more than the crawl needs (seconds), far less than failure
	// backoff would take.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatalf("%v (the unresolvable host's URLs did not end within a minute)", err)
	}
	if queries.Load() == 0 {
		t.Fatal("the local DNS server was never asked: the test did not exercise the resolver")
	}
	recs := readOut(t, cfg.Out)
	for i := range n {
		u := fmt.Sprintf("http://nowhere.test/p%d", i)
		rec := recs[u]
		if rec == nil {
			t.Errorf("%s: no record", u)
			continue
		}
		msg, _ := rec["error"].(string)
		if rec["status"] != float64(0) || !strings.Contains(msg, "no such host") {
			t.Errorf("%s: status %v, error %q; want 0, no such host", u, rec["status"], msg)
		}
	}
	if rec := recs[live.URL("/a")]; rec == nil || rec["status"] != float64(200) {
		t.Errorf("live host's page: %v", rec)
	}
	if got := sum.Counters[`trawler_fetcher_failures_total{kind="dns"}`]; got != n {
		t.Errorf("failures of kind dns = %v, want %d", got, n)
	}
	if got := sum.Counters["trawler_fetcher_robots_given_up_hosts_total"]; got != 0 {
		t.Errorf("robots given-up hosts = %v with --ignore-robots, want 0", got)
	}
}

// A seed's name is looked up once: the seeds' address check and the
// fetcher share run's resolver (and its cache, negative answers included).
func TestASeedsNameIsLookedUpOnce(t *testing.T) {
	s := testsite.New()
	live := s.AddHost(t, "live", "127.0.2.22")
	live.Set("/", testsite.Page{})
	dnsAddr, queries := nxdomainServer(t)
	cfg := testConfig(t, []string{live.URL("/"), "http://nowhere.test/"})
	cfg.Resolver, cfg.DNSServers = "trawler", []string{dnsAddr}
	cfg.RobotsRetry = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := app.RunAll(ctx, cfg, app.RunOptions{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	// Every query the server saw is the crawl resolver's, which missed
	// its cache once: no other resolver asked (the seeds' check had one of
	// its own, which asked again).
	if misses := sum.Counters[`trawler_dns_lookups_total{outcome="miss"}`]; misses != 1 {
		t.Errorf("resolver cache misses = %v, want 1 (nowhere.test)", misses)
	}
	if sent, seen := sum.Counters["trawler_dns_queries_total"], queries.Load(); seen == 0 || float64(seen) != sent {
		t.Errorf("the DNS server saw %d queries, the crawl's resolver sent %v: a name was looked up by another resolver too", seen, sent)
	}
}
