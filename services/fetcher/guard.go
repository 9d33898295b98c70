package fetcher

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
)

// The address guard: which addresses a fetch may connect to. A crawler
// follows links anyone can write, so by default it connects only to
// publicly routable addresses: a link to http://10.0.0.5/admin or to the
// cloud metadata service must not reach it. Three levels of classes:
//
//   - private (allowed by --allow-private, for crawling one's own network
//     and for tests): loopback, RFC 1918 and unique-local (fc00::/7), the
//     deprecated site-local fec0::/10, carrier-grade NAT, benchmarking
//     (198.18.0.0/15, 2001:2::/48), documentation ranges, and IPv4 inside
//     IPv6 (NAT64, IPv4-compatible, 6to4, Teredo) of public IPv4;
//   - link-local (allowed only by --allow-link-local, on top): 169.254/16
//     and fe80::/10, and the cloud metadata services (169.254.169.254,
//     fd00:ec2::254, 100.100.100.200) whatever range holds them;
//   - never, whatever the flags: unspecified (0.0.0.0/8, ::), multicast
//     (224.0.0.0/4, ff00::/8: a crawler has no business with group
//     traffic), broadcast, the reserved 240/4, the IETF's 192.0.0.0/24 and
//     the discard-only 100::/64.
//
// An IPv4 address embedded in an IPv6 one (mapped ::ffff:a.b.c.d,
// IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
// 2002::/16, Teredo 2001::/32) is judged as that IPv4 address: NAT64 or 6to4
// to 127.0.0.1 is loopback. Every one of these forms but mapped is at least
// private (the IPv4 address gets there through a gateway). The Helm chart's
// NetworkPolicy denies the same ranges (charts/trawler/values.yaml,
// networkPolicy.deniedCIDRs and deniedCIDRsV6); TestChartDeniesWhatTheGuardRefuses
// keeps the two in step.

// guard holds what the crawl allows on top of public addresses.
type guard struct {
	allowPrivate, allowLinkLocal bool
}

// addrLevel is how far an address class is from public.
type addrLevel int

const (
	public addrLevel = iota
	private
	linkLocal
	never
)

var (
	cgnat         = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork   = netip.MustParsePrefix("0.0.0.0/8")
	ietf          = netip.MustParsePrefix("192.0.0.0/24")
	benchmarking  = netip.MustParsePrefix("198.18.0.0/15")
	reserved      = netip.MustParsePrefix("240.0.0.0/4")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local    = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	teredo        = netip.MustParsePrefix("2001::/32")
	ipv4Compat    = netip.MustParsePrefix("::/96")
	siteLocal     = netip.MustParsePrefix("fec0::/10")
	benchmarking6 = netip.MustParsePrefix("2001:2::/48")
	discardOnly   = netip.MustParsePrefix("100::/64")
	broadcast     = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	documentation = []netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("3fff::/20"),
	}
	metadata = map[netip.Addr]bool{
		netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack...
		netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	}
)

// classify names the class of a that makes it unfit for crawling ("" for a
// public address) and how far from public it is.
func classify(a netip.Addr) (string, addrLevel) {
	a = a.WithZone("")
	if !a.IsValid() {
		return "invalid", never
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	if metadata[a] {
		return "cloud metadata", linkLocal
	}
	if a.Is6() {
		if v4, how, ok := embeddedIPv4(a); ok {
			if class, level := classify(v4); level != public {
				return class + " (" + v4.String() + " in " + how + ")", level
			}
			// Of a public address: translated by a gateway (NAT64), or a
			// transition mechanism nobody needs to crawl through; the chart
			// denies these ranges too.
			return how, private
		}
	}
	switch {
	case a.IsLoopback():
		return "loopback", private
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "unspecified", never
	case a.IsPrivate():
		return "private", private
	case a.IsLinkLocalUnicast():
		return "link-local", linkLocal
	case a == broadcast:
		return "broadcast", never
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "multicast", never
	case siteLocal.Contains(a):
		return "site-local", private
	case cgnat.Contains(a):
		return "carrier-grade NAT", private
	case benchmarking.Contains(a), benchmarking6.Contains(a):
		return "benchmarking", private
	case ietf.Contains(a), reserved.Contains(a), discardOnly.Contains(a):
		return "reserved", never
	}
	for _, p := range documentation {
		if p.Contains(a) {
			return "documentation", private
		}
	}
	return "", public
}

// embeddedIPv4 returns the IPv4 address an IPv6 one carries, and in which
// form.
func embeddedIPv4(a netip.Addr) (netip.Addr, string, bool) {
	b := a.As16()
	last4 := func(off int) netip.Addr { return netip.AddrFrom4([4]byte(b[off : off+4])) }
	switch {
	case nat64.Contains(a), nat64Local.Contains(a):
		// The local-use prefix may hold the address elsewhere if the
		// operator uses a shorter prefix inside it (RFC 6052); /96 is the
		// usual layout, and any address there is refused without
		// --allow-private anyway.
		return last4(12), "NAT64", true
	case sixToFour.Contains(a):
		return last4(2), "6to4", true
	case teredo.Contains(a):
		// The client's address is the last 32 bits inverted; the server's
		// is bits 32-63. Judge by the client: that is where traffic goes.
		v := binary.BigEndian.Uint32(b[12:]) ^ 0xffffffff
		var c [4]byte
		binary.BigEndian.PutUint32(c[:], v)
		return netip.AddrFrom4(c), "Teredo", true
	case ipv4Compat.Contains(a) && !a.IsLoopback() && !a.IsUnspecified():
		return last4(12), "IPv4-compatible", true
	}
	return netip.Addr{}, "", false
}

// check returns nil when a may be fetched, else a *BlockedAddressError that
// names the class and the flag that would allow it.
func (g guard) check(a netip.Addr) error {
	class, level := classify(a)
	switch {
	case level == public,
		level == private && g.allowPrivate,
		level == linkLocal && g.allowPrivate && g.allowLinkLocal:
		return nil
	}
	e := &BlockedAddressError{Addr: a.Unmap(), Reason: class}
	switch level {
	case private:
		e.Flag = "--allow-private"
	case linkLocal:
		e.Flag = "--allow-private --allow-link-local"
	}
	return e
}

// filter returns the addresses of addrs that may be fetched, in order
// (IPv4-mapped ones unmapped), or the first refusal when there are none.
// An empty addrs gives neither.
func (g guard) filter(addrs []netip.Addr) ([]netip.Addr, error) {
	var ok []netip.Addr
	var first error
	for _, a := range addrs {
		a = a.Unmap()
		if err := g.check(a); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, first
	}
	return ok, nil
}

// fetchable resolves host as a fetch does, within ConnectTimeout, and
// returns the addresses the guard lets through, in the order the dialer tries
// them; or the refusal, a *BlockedAddressError, when it lets none through; or
// the resolver's error.
func (c *HTTPClient) fetchable(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	addrs, err := c.dialer.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	return c.dialer.guard.filter(addrs)
}

// CheckAddress tells whether the address guard would refuse a fetch of
// rawURL, without connecting: it resolves the host as a fetch does and
// returns the *BlockedAddressError the fetch would fail with when none of its
// addresses may be fetched. It returns nil otherwise, also when rawURL is
// invalid or its host does not resolve (the fetch itself reports those).
func (c *HTTPClient) CheckAddress(ctx context.Context, rawURL string) error {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil
	}
	_, err = c.fetchable(ctx, u.Hostname())
	var blocked *BlockedAddressError
	if errors.As(err, &blocked) {
		return blocked
	}
	return nil
}

// control is the net.Dialer Control function: it runs after the socket is
// created and before connect, with the resolved "ip:port" (defence in depth
// behind the dialer's own check).
func (g guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to dial %q: not an IP address and port", address)
	}
	return g.check(ap.Addr())
}

// BlockedAddressError is the Err of a fetch refused because the host resolved
// to an address that is not publicly routable.
type BlockedAddressError struct {
	Addr   netip.Addr
	Reason string // e.g. "loopback", "private", "cloud metadata"
	Flag   string // the flag that allows it; "" for a class never fetched
}

func (e *BlockedAddressError) Error() string {
	if e.Flag == "" {
		return fmt.Sprintf("blocked address %s (%s): never fetched", e.Addr, e.Reason)
	}
	return fmt.Sprintf("blocked address %s (%s); pass %s to permit", e.Addr, e.Reason, e.Flag)
}

// hostSet remembers hosts, e.g. to log something once per host; it forgets
// them all when it holds maxHostSet. The zero value is ready.
type hostSet struct {
	mu    sync.Mutex
	hosts map[string]struct{}
}

const maxHostSet = 4096

// first records host and tells whether it was new.
func (h *hostSet) first(host string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.hosts[host]; ok {
		return false
	}
	if h.hosts == nil || len(h.hosts) >= maxHostSet {
		h.hosts = make(map[string]struct{})
	}
	h.hosts[host] = struct{}{}
	return true
}
