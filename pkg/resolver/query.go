package resolver

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

const (
	// ednsSize is the UDP payload size we advertise: the DNS Flag Day 2020
	// value, large enough for most A/AAAA answers and small enough not to
	// fragment. Bigger answers come back truncated and are retried over TCP.
	ednsSize = 1232
	// maxCNAMEHops bounds how far an answer's CNAME chain is followed.
	maxCNAMEHops = 8
	// noTTL marks a failure for which the server gave no cacheable TTL.
	noTTL time.Duration = -1
)

// answer is the outcome of one query type (A or AAAA) for one name.
//
//	fail == nil, len(addrs) > 0: addresses
//	fail == nil, len(addrs) == 0: the name exists without records of this type (NODATA)
//	fail != nil: NXDOMAIN (failNotFound), SERVFAIL etc., or timeout
type answer struct {
	addrs    []netip.Addr
	ttl      time.Duration // smallest TTL of the records used, or the SOA's negative TTL, or noTTL
	fail     *failure
	canceled bool // the flight was abandoned; nothing may be cached
}

// query asks the servers in turn, Attempts rounds, until one gives a final
// answer (addresses, NODATA or NXDOMAIN). It runs without any lock held.
func (r *Resolver) query(ctx context.Context, name string, qtype uint16) answer {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(ednsSize, false)
	last := answer{fail: failTimeout, ttl: noTTL}
	for range r.attempts {
		for _, server := range r.servers {
			m.Id = dns.Id() // a fresh ID per send: a late reply to an earlier try is ignored
			resp, err := r.exchangeFallback(ctx, server, m)
			if ctx.Err() != nil {
				return answer{canceled: true}
			}
			if err != nil {
				last = answer{fail: classify(err, server), ttl: noTTL}
				continue
			}
			a, final := readReply(resp, name, qtype, server)
			if final {
				return a
			}
			last = a
		}
	}
	return last
}

// exchangeFallback sends m over UDP and repeats it over TCP when the UDP
// answer is truncated.
func (r *Resolver) exchangeFallback(ctx context.Context, server string, m *dns.Msg) (*dns.Msg, error) {
	resp, err := r.exchange(ctx, r.udp, server, m)
	if err == nil && resp.Truncated {
		resp, err = r.exchange(ctx, r.tcp, server, m)
	}
	return resp, err
}

// exchange sends one query on a connection of its own (a fresh random source
// port per query, as RFC 5452 asks) and waits at most Timeout for the reply.
func (r *Resolver) exchange(ctx context.Context, c *dns.Client, server string, m *dns.Msg) (*dns.Msg, error) {
	r.stats.queries.Add(1)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	co, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer co.Close()
	// miekg/dns turns the context's deadline into a socket deadline but does
	// not watch for cancellation; closing the socket ends the read at once.
	stop := context.AfterFunc(ctx, func() { co.Close() })
	defer stop()
	resp, _, err := c.ExchangeWithConnContext(ctx, m, co)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err() // a timeout, not the "closed connection" it caused
	}
	return resp, err
}

// classify maps a transport error to the failure cached for it.
func classify(err error, server string) *failure {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return failTimeout
	}
	return failServer(server) // refused connection, unreadable reply, ...
}

// readReply interprets a reply. final reports whether asking another server
// could not change the outcome.
func readReply(resp *dns.Msg, name string, qtype uint16, server string) (a answer, final bool) {
	if len(resp.Question) != 1 || resp.Question[0].Qtype != qtype ||
		!strings.EqualFold(resp.Question[0].Name, name) {
		return answer{fail: failServer(server), ttl: noTTL}, false
	}
	switch resp.Rcode {
	case dns.RcodeSuccess:
		addrs, ttl := addrsFrom(resp, name, qtype)
		if len(addrs) == 0 {
			return answer{ttl: negativeTTL(resp)}, true // NODATA
		}
		return answer{addrs: addrs, ttl: ttl}, true
	case dns.RcodeNameError:
		return answer{fail: failNotFound, ttl: negativeTTL(resp)}, true
	default:
		return answer{fail: failServer(server), ttl: noTTL}, false
	}
}

// addrsFrom collects the addresses of name, following its CNAME chain so that
// records for unrelated names in the answer section are ignored. ttl is the
// smallest TTL along the chain.
func addrsFrom(resp *dns.Msg, name string, qtype uint16) (addrs []netip.Addr, ttl time.Duration) {
	owner, minTTL := name, ^uint32(0)
	for range maxCNAMEHops {
		next := ""
		for _, rr := range resp.Answer {
			if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, owner) {
				next, minTTL = c.Target, min(minTTL, c.Hdr.Ttl)
				break
			}
		}
		if next == "" {
			break
		}
		owner = next
	}
	for _, rr := range resp.Answer {
		h := rr.Header()
		if h.Rrtype != qtype || !strings.EqualFold(h.Name, owner) {
			continue
		}
		var ip net.IP
		switch v := rr.(type) {
		case *dns.A:
			ip = v.A.To4()
		case *dns.AAAA:
			ip = v.AAAA.To16()
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			addrs = append(addrs, a)
			minTTL = min(minTTL, h.Ttl)
		}
	}
	return addrs, time.Duration(minTTL) * time.Second
}

// negativeTTL is how long the zone allows a negative answer to be cached
// (RFC 2308: the smaller of the SOA record's TTL and its MINIMUM field).
func negativeTTL(resp *dns.Msg) time.Duration {
	for _, rr := range resp.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			return time.Duration(min(soa.Hdr.Ttl, soa.Minttl)) * time.Second
		}
	}
	return noTTL
}
