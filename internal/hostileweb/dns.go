package hostileweb

import (
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/net/dns/dnsmessage"
)

// serveDNS answers every query with NXDOMAIN on a UDP port of ip, so that a
// crawler pointed at it (Trawler's --dns-servers) learns at once, without
// the internet, that Unresolvable does not exist.
func (w *Web) serveDNS(ip netip.Addr) error {
	pc, err := net.ListenPacket("udp", ip.String()+":0")
	if err != nil {
		return fmt.Errorf("hostileweb: dns: %w", err)
	}
	w.DNS = pc.LocalAddr().String()
	w.addCloser(func() { pc.Close() })
	w.wg.Go(func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := nxdomain(buf[:n]); resp != nil {
				_, _ = pc.WriteTo(resp, addr)
			}
		}
	})
	return nil
}

// nxdomain is the NXDOMAIN answer to a query; nil for a malformed one.
func nxdomain(query []byte) []byte {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true,
		RecursionDesired: hdr.RecursionDesired, RecursionAvailable: true, RCode: dnsmessage.RCodeNameError})
	if b.StartQuestions() != nil || b.Question(q) != nil {
		return nil
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
