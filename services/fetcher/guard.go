package fetcher

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
)

// The address guard: which addresses a fetch may connect to. A crawler
// follows links anyone can write, so by default it connects only to
// publicly routable addresses: a link to http://10.0.0.5/admin or to the
// cloud metadata service must not reach it. Three levels of classes:
//
//   - private (allowed by --allow-private, for crawling one's own network
//     and for tests): loopback, RFC 1918 and unique-local, carrier-grade
//     NAT, benchmarking (198.18.0.0/15), documentation ranges, and IPv4
//     inside IPv6 (NAT64, IPv4-compatible, 6to4, Teredo) of public IPv4;
//   - link-local (allowed only by --allow-link-local, on top): 169.254/16
//     and fe80::/10, and the cloud metadata services (169.254.169.254,
//     fd00:ec2::254, 100.100.100.200) whatever range holds them;
//   - never: unspecified, multicast, broadcast, the reserved 240/4 and the
//     IETF's 192.0.0.0/24.
//
// An IPv4 address embedded in an IPv6 one (mapped ::ffff:a.b.c.d,
// IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
// 2002::/16, Teredo 2001::/32) is judged as that IPv4 address: NAT64 or 6to4
// to 127.0.0.1 is loopback. The same ranges are denied by the Helm chart's
// NetworkPolicy (charts/trawler/values.yaml, networkPolicy.deniedCIDRs).

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
	documentation = []netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32"),
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
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "multicast", never
	case cgnat.Contains(a):
		return "carrier-grade NAT", private
	case benchmarking.Contains(a):
		return "benchmarking", private
	case ietf.Contains(a), reserved.Contains(a):
		return "reserved", never
	case nat64Local.Contains(a):
		return "NAT64", private
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
	case nat64.Contains(a):
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
