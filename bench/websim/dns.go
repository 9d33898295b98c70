package websim

import (
	"fmt"
	"net"

	"golang.org/x/net/dns/dnsmessage"
)

// serveDNS answers the web's host names on a UDP port of 127.0.0.1: an A
// record per host (TTL one hour), no AAAA record, NXDOMAIN for any other
// name. Crawlers with a resolver of their own are pointed at it (Trawler's
// --dns-servers); the others resolve through the harness (Colly's dialer)
// or the proxy (Wget).
func (s *Server) serveDNS() error {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("websim dns: %w", err)
	}
	s.dns = pc
	s.wg.Go(func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := s.web.dnsAnswer(buf[:n]); resp != nil {
				_, _ = pc.WriteTo(resp, addr)
			}
		}
	})
	return nil
}

// dnsAnswer is the response to one DNS query, nil for a malformed one.
func (w *Web) dnsAnswer(query []byte) []byte {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	h := w.hostNamed(q.Name.String())
	rh := dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true, RecursionDesired: hdr.RecursionDesired, RecursionAvailable: true}
	if h < 0 {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if h >= 0 && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		a := dnsmessage.AResource{A: [4]byte{127, byte(w.cfg.Block), byte(h/250 + 1), byte(h%250 + 1)}}
		if b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 3600}, a) != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
