package resolver

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testDNS is a DNS server on loopback (UDP and TCP on one port) whose
// answers depend on the name asked:
//
//	*.invalid          NXDOMAIN, with an SOA whose negative TTL is soaTTL
//	fail*              SERVFAIL
//	silent*            never answered
//	nodata*            no A, no AAAA (NODATA)
//	v4only*, v6only*   only A, only AAAA
//	big*               truncated over UDP; 100 A records over TCP
//	alias*             CNAME to target.test, plus an unrelated A record
//	anything else      one A (192.0.2.1) and one AAAA (2001:db8::1)
//
// Every answer has TTL ttl; delay(name), when set, delays the answer.
type testDNS struct {
	addr   string
	ttl    atomic.Uint32
	soaTTL atomic.Uint32
	delay  func(name string) time.Duration // set before the first query

	mu     sync.Mutex
	counts map[string]int // "name TYPE" and "name TYPE tcp" -> queries received
	total  int
}

func startDNS(tb testing.TB, delay func(string) time.Duration) *testDNS {
	tb.Helper()
	s := &testDNS{delay: delay, counts: make(map[string]int)}
	s.ttl.Store(3600)
	s.soaTTL.Store(3600)
	for try := 0; ; try++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil && try < 5 { // the TCP port happened to be taken
			pc.Close()
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		s.addr = pc.LocalAddr().String()
		serve(tb, &dns.Server{PacketConn: pc, Handler: s})
		serve(tb, &dns.Server{Listener: l, Handler: s})
		return s
	}
}

func serve(tb testing.TB, srv *dns.Server) {
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	tb.Cleanup(func() { srv.Shutdown() })
}

// queries returns how many queries of type qtype for name arrived (UDP and TCP).
func (s *testDNS) queries(name string, qtype uint16) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := dns.Fqdn(name) + " " + dns.TypeToString[qtype]
	return s.counts[k] + s.counts[k+" tcp"]
}

func (s *testDNS) tcpQueries(name string, qtype uint16) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[dns.Fqdn(name)+" "+dns.TypeToString[qtype]+" tcp"]
}

func (s *testDNS) totalQueries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func (s *testDNS) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 {
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	tcp := w.RemoteAddr().Network() == "tcp"
	s.count(name, q.Qtype, tcp)
	if s.delay != nil {
		time.Sleep(s.delay(name)) // a slow name server is what the test is about
	}
	m := new(dns.Msg)
	m.SetReply(req)
	switch {
	case strings.HasPrefix(name, "silent"):
		return
	case strings.HasSuffix(name, ".invalid."):
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{s.soa()}
	case strings.HasPrefix(name, "fail"):
		m.Rcode = dns.RcodeServerFailure
	case strings.HasPrefix(name, "big") && !tcp:
		m.Truncated = true
	default:
		m.Answer = s.records(name, q.Qtype)
		if len(m.Answer) == 0 {
			m.Ns = []dns.RR{s.soa()}
		}
	}
	w.WriteMsg(m)
}

func (s *testDNS) count(name string, qtype uint16, tcp bool) {
	k := name + " " + dns.TypeToString[qtype]
	if tcp {
		k += " tcp"
	}
	s.mu.Lock()
	s.counts[k]++
	s.total++
	s.mu.Unlock()
}

func (s *testDNS) soa() dns.RR {
	t := s.soaTTL.Load()
	return &dns.SOA{
		Hdr: dns.RR_Header{Name: "invalid.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: t},
		Ns:  "ns.invalid.", Mbox: "hostmaster.invalid.", Serial: 1,
		Refresh: 3600, Retry: 600, Expire: 86400, Minttl: t,
	}
}

func (s *testDNS) records(name string, qtype uint16) []dns.RR {
	ttl := s.ttl.Load()
	switch {
	case strings.HasPrefix(name, "nodata"),
		strings.HasPrefix(name, "v4only") && qtype == dns.TypeAAAA,
		strings.HasPrefix(name, "v6only") && qtype == dns.TypeA:
		return nil
	case strings.HasPrefix(name, "big"):
		if qtype != dns.TypeA {
			return nil
		}
		var rrs []dns.RR
		for i := range 100 {
			rrs = append(rrs, rr(fmt.Sprintf("%s %d IN A 198.51.100.%d", name, ttl, i+1)))
		}
		return rrs
	case strings.HasPrefix(name, "alias"):
		if qtype != dns.TypeA {
			return nil
		}
		return []dns.RR{
			rr(fmt.Sprintf("%s 60 IN CNAME target.test.", name)),
			rr(fmt.Sprintf("unrelated.test. %d IN A 203.0.113.66", ttl)),
			rr(fmt.Sprintf("target.test. %d IN A 203.0.113.7", ttl)),
		}
	case qtype == dns.TypeA:
		return []dns.RR{rr(fmt.Sprintf("%s %d IN A 192.0.2.1", name, ttl))}
	case qtype == dns.TypeAAAA:
		return []dns.RR{rr(fmt.Sprintf("%s %d IN AAAA 2001:db8::1", name, ttl))}
	}
	return nil
}

func rr(s string) dns.RR {
	r, err := dns.NewRR(s)
	if err != nil {
		panic(err)
	}
	return r
}

// fakeClock drives cache expiry in tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
