package fetcher

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v2"
)

// guardSpec is the address guard's specification, written apart from its
// code: every range it refuses, with the class it names and how far from
// public it is. The most specific range holding an address decides; an
// address in none is public. IPv6 forms that carry an IPv4 address are in
// embeddedSpec.
var guardSpec = []struct {
	prefix, class string
	level         addrLevel
}{
	{"0.0.0.0/8", "unspecified", never},
	{"10.0.0.0/8", "private", private},
	{"100.64.0.0/10", "carrier-grade NAT", private},
	{"100.100.100.200/32", "cloud metadata", linkLocal},
	{"127.0.0.0/8", "loopback", private},
	{"169.254.0.0/16", "link-local", linkLocal},
	{"169.254.169.254/32", "cloud metadata", linkLocal},
	{"172.16.0.0/12", "private", private},
	{"192.0.0.0/24", "reserved", never},
	{"192.0.2.0/24", "documentation", private},
	{"192.168.0.0/16", "private", private},
	{"198.18.0.0/15", "benchmarking", private},
	{"198.51.100.0/24", "documentation", private},
	{"203.0.113.0/24", "documentation", private},
	{"224.0.0.0/4", "multicast", never},
	{"240.0.0.0/4", "reserved", never},
	{"255.255.255.255/32", "broadcast", never},
	{"::/128", "unspecified", never},
	{"::1/128", "loopback", private},
	{"100::/64", "reserved", never},
	{"2001:2::/48", "benchmarking", private},
	{"2001:db8::/32", "documentation", private},
	{"3fff::/20", "documentation", private},
	{"fc00::/7", "private", private},
	{"fd00:ec2::254/128", "cloud metadata", linkLocal},
	{"fe80::/10", "link-local", linkLocal},
	{"fec0::/10", "site-local", private},
	{"ff00::/8", "multicast", never},
}

// embeddedSpec lists the IPv6 forms that carry an IPv4 address, and where.
// Such an address is judged as its IPv4 one; of a public IPv4 address it is
// still private (named by its form), except the mapped form, which is the
// IPv4 address itself.
var embeddedSpec = []struct {
	prefix, how string
	v4          func(b [16]byte) [4]byte
}{
	{"::ffff:0:0/96", "", func(b [16]byte) [4]byte { return [4]byte(b[12:]) }},
	{"::/96", "IPv4-compatible", func(b [16]byte) [4]byte { return [4]byte(b[12:]) }},
	{"64:ff9b::/96", "NAT64", func(b [16]byte) [4]byte { return [4]byte(b[12:]) }},
	{"64:ff9b:1::/48", "NAT64", func(b [16]byte) [4]byte { return [4]byte(b[12:]) }},
	{"2002::/16", "6to4", func(b [16]byte) [4]byte { return [4]byte(b[2:6]) }},
	{"2001::/32", "Teredo", func(b [16]byte) [4]byte { // the client: the last 32 bits inverted
		var c [4]byte
		binary.BigEndian.PutUint32(c[:], ^binary.BigEndian.Uint32(b[12:]))
		return c
	}},
}

// expected is what the specification says of a.
func expected(a netip.Addr) (string, addrLevel) {
	if a.Is6() && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback() {
		for _, e := range embeddedSpec {
			if !netip.MustParsePrefix(e.prefix).Contains(a) {
				continue
			}
			v4 := netip.AddrFrom4(e.v4(a.As16()))
			class, level := expected(v4)
			switch {
			case e.how == "":
				return class, level
			case level == public:
				return e.how, private
			}
			return fmt.Sprintf("%s (%s in %s)", class, v4, e.how), level
		}
	}
	best := -1
	class, level := "", public
	for _, r := range guardSpec {
		p := netip.MustParsePrefix(r.prefix)
		if p.Contains(a) && p.Bits() > best {
			best, class, level = p.Bits(), r.class, r.level
		}
	}
	return class, level
}

// lastOf is the last address of p.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// boundaries are the first and last addresses of every range of the
// specification and their neighbours outside it.
func boundaries() []netip.Addr {
	var prefixes []string
	for _, r := range guardSpec {
		prefixes = append(prefixes, r.prefix)
	}
	for _, e := range embeddedSpec {
		prefixes = append(prefixes, e.prefix)
	}
	var out []netip.Addr
	for _, s := range prefixes {
		p := netip.MustParsePrefix(s)
		first, last := p.Masked().Addr(), lastOf(p)
		for _, a := range []netip.Addr{first.Prev(), first, first.Next(), last.Prev(), last, last.Next()} {
			if a.IsValid() {
				out = append(out, a)
			}
		}
	}
	return out
}

// Issue 19 #4 and #6: every range on both sides of each boundary, against the
// specification above.
func TestClassifyBoundaries(t *testing.T) {
	n := 0
	for _, a := range boundaries() {
		wantClass, wantLevel := expected(a)
		class, level := classify(a)
		if class != wantClass || level != wantLevel {
			t.Errorf("classify(%s) = %q, %d; want %q, %d", a, class, level, wantClass, wantLevel)
		}
		n++
	}
	if n < 6*len(guardSpec) {
		t.Fatalf("only %d boundary addresses", n)
	}
}

// The same by hand, for what the generated boundaries could get wrong with
// the specification: the classes of a few well-known addresses, and IPv4
// inside IPv6 judged as IPv4.
func TestClassify(t *testing.T) {
	for addr, want := range map[string]struct {
		class string
		level addrLevel
	}{
		"127.0.0.1": {"loopback", private}, "127.255.0.9": {"loopback", private}, "::1": {"loopback", private},
		"126.255.255.255": {"", public}, "128.0.0.0": {"", public},
		"::ffff:127.0.0.1": {"loopback", private},
		"0.0.0.0":          {"unspecified", never}, "0.1.2.3": {"unspecified", never}, "::": {"unspecified", never}, "1.0.0.0": {"", public},
		"10.0.0.1": {"private", private}, "9.255.255.255": {"", public}, "11.0.0.0": {"", public},
		"172.16.0.1": {"private", private}, "172.31.255.255": {"private", private}, "172.15.255.255": {"", public}, "172.32.0.1": {"", public},
		"192.168.1.1": {"private", private}, "192.169.0.0": {"", public}, "192.167.255.255": {"", public},
		"fc00::1": {"private", private}, "fd12:3456::1": {"private", private}, "fbff::1": {"", public}, "fe00::": {"", public},
		"169.254.169.254": {"cloud metadata", linkLocal}, "169.254.0.1": {"link-local", linkLocal}, "169.253.255.255": {"", public}, "169.255.0.0": {"", public},
		"fd00:ec2::254": {"cloud metadata", linkLocal}, "fd00:ec2::253": {"private", private}, "100.100.100.200": {"cloud metadata", linkLocal},
		"fe80::1": {"link-local", linkLocal}, "fe80::1%eth0": {"link-local", linkLocal}, "febf::1": {"link-local", linkLocal}, "fe7f:ffff::1": {"", public},
		"fec0::1": {"site-local", private}, "feff::1": {"site-local", private}, "fe7f::1": {"", public},
		"224.0.0.1": {"multicast", never}, "239.255.255.250": {"multicast", never}, "223.255.255.255": {"", public},
		"ff02::1": {"multicast", never}, "ff05::1:3": {"multicast", never},
		"255.255.255.255": {"broadcast", never}, "255.255.255.254": {"reserved", never},
		"100.64.0.1": {"carrier-grade NAT", private}, "100.127.255.255": {"carrier-grade NAT", private},
		"100.63.255.255": {"", public}, "100.128.0.0": {"", public},
		"192.0.0.1": {"reserved", never}, "192.0.1.0": {"", public}, "191.255.255.255": {"", public},
		"198.18.0.1": {"benchmarking", private}, "198.19.255.255": {"benchmarking", private}, "198.17.255.255": {"", public}, "198.20.0.0": {"", public},
		"2001:2::1": {"benchmarking", private}, "2001:2:1::": {"", public},
		"240.0.0.1": {"reserved", never}, "254.255.255.255": {"reserved", never},
		"192.0.2.7": {"documentation", private}, "198.51.100.1": {"documentation", private}, "203.0.113.255": {"documentation", private},
		"2001:db8::1": {"documentation", private}, "3fff::1": {"documentation", private}, "3fff:fff::": {"documentation", private}, "3fff:1000::": {"", public},
		"100::1": {"reserved", never}, "100:0:0:1::": {"", public},
		"64:ff9b::7f00:1":                      {"loopback (127.0.0.1 in NAT64)", private},
		"64:ff9b::a00:1":                       {"private (10.0.0.1 in NAT64)", private},
		"64:ff9b::a9fe:a9fe":                   {"cloud metadata (169.254.169.254 in NAT64)", linkLocal},
		"64:ff9b::808:808":                     {"NAT64", private},
		"64:ff9b:1::808:808":                   {"NAT64", private},
		"64:ff9b:1:abcd::a9fe:a9fe":            {"cloud metadata (169.254.169.254 in NAT64)", linkLocal},
		"::7f00:1":                             {"loopback (127.0.0.1 in IPv4-compatible)", private},
		"::808:808":                            {"IPv4-compatible", private},
		"::a9fe:1":                             {"link-local (169.254.0.1 in IPv4-compatible)", linkLocal},
		"2002:7f00:1::1":                       {"loopback (127.0.0.1 in 6to4)", private},
		"2002:a9fe:a9fe::1":                    {"cloud metadata (169.254.169.254 in 6to4)", linkLocal},
		"2002:e000:1::":                        {"multicast (224.0.0.1 in 6to4)", never},
		"2002:808:808::1":                      {"6to4", private},
		"2001:0:4136:e378:8000:63bf:80ff:fffe": {"loopback (127.0.0.1 in Teredo)", private},
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7": {"Teredo", private},
		"::ffff:169.254.169.254":               {"cloud metadata", linkLocal},
		"8.8.8.8":                              {"", public}, "2606:4700::1111": {"", public}, "::ffff:8.8.8.8": {"", public},
		"2001:4860:4860::8888": {"", public}, "2003::1": {"", public}, "2001:1::1": {"", public},
	} {
		class, level := classify(netip.MustParseAddr(addr))
		if class != want.class || level != want.level {
			t.Errorf("classify(%s) = %q, %d; want %q, %d", addr, class, level, want.class, want.level)
		}
		if wc, wl := expected(netip.MustParseAddr(addr).WithZone("")); wc != want.class || wl != want.level {
			t.Errorf("the specification says %q, %d of %s; the table %q, %d", wc, wl, addr, want.class, want.level)
		}
	}
	if _, level := classify(netip.Addr{}); level != never {
		t.Error("the zero Addr is fetchable")
	}
}

// What each level needs: private --allow-private, link-local both flags,
// never nothing. The error names the class and the flag.
func TestGuardCheckFlags(t *testing.T) {
	none, priv, both, linkOnly := guard{}, guard{allowPrivate: true}, guard{allowPrivate: true, allowLinkLocal: true}, guard{allowLinkLocal: true}
	for _, tc := range []struct {
		addr  string
		allow []guard // the guards that let it through
		msg   string  // of the refusal by guard{}
	}{
		{"93.184.215.14", []guard{none, priv, both, linkOnly}, ""},
		{"127.0.0.1", []guard{priv, both}, "blocked address 127.0.0.1 (loopback); pass --allow-private to permit"},
		{"10.1.2.3", []guard{priv, both}, "blocked address 10.1.2.3 (private); pass --allow-private to permit"},
		{"100.64.0.1", []guard{priv, both}, "blocked address 100.64.0.1 (carrier-grade NAT); pass --allow-private to permit"},
		{"169.254.169.254", []guard{both}, "blocked address 169.254.169.254 (cloud metadata); pass --allow-private --allow-link-local to permit"},
		{"fd00:ec2::254", []guard{both}, "blocked address fd00:ec2::254 (cloud metadata); pass --allow-private --allow-link-local to permit"},
		{"fe80::1", []guard{both}, "blocked address fe80::1 (link-local); pass --allow-private --allow-link-local to permit"},
		{"::ffff:169.254.1.1", []guard{both}, "blocked address 169.254.1.1 (link-local); pass --allow-private --allow-link-local to permit"},
		{"224.0.0.1", nil, "blocked address 224.0.0.1 (multicast): never fetched"},
		{"ff02::1", nil, "blocked address ff02::1 (multicast): never fetched"},
		{"255.255.255.255", nil, "blocked address 255.255.255.255 (broadcast): never fetched"},
		{"0.0.0.0", nil, "blocked address 0.0.0.0 (unspecified): never fetched"},
		{"240.0.0.1", nil, "blocked address 240.0.0.1 (reserved): never fetched"},
		{"64:ff9b::e000:1", nil, "blocked address 64:ff9b::e000:1 (multicast (224.0.0.1 in NAT64)): never fetched"},
	} {
		a := netip.MustParseAddr(tc.addr)
		for _, g := range []guard{none, priv, both, linkOnly} {
			allowed := false
			for _, ok := range tc.allow {
				allowed = allowed || ok == g
			}
			err := g.check(a)
			if (err == nil) != allowed {
				t.Errorf("%+v.check(%s) = %v, want allowed %v", g, a, err, allowed)
			}
			var blocked *BlockedAddressError
			if err != nil && !errors.As(err, &blocked) {
				t.Errorf("%+v.check(%s): %T", g, a, err)
			}
		}
		if err := none.check(a); tc.msg != "" && (err == nil || err.Error() != tc.msg) {
			t.Errorf("check(%s) = %v, want %q", a, err, tc.msg)
		}
	}
}

// The guard's filter keeps the fetchable addresses in order, unmapped, or
// gives the first refusal.
func TestGuardFilter(t *testing.T) {
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	ok, err := guard{}.filter(addrs("10.0.0.1", "::ffff:93.184.215.14", "127.0.0.1", "2606:4700::1111"))
	if err != nil || fmt.Sprint(ok) != "[93.184.215.14 2606:4700::1111]" {
		t.Errorf("filter = %v, %v", ok, err)
	}
	ok, err = guard{}.filter(addrs("10.0.0.1", "169.254.169.254"))
	if ok != nil || err == nil || err.Error() != "blocked address 10.0.0.1 (private); pass --allow-private to permit" {
		t.Errorf("filter of refused addresses = %v, %v", ok, err)
	}
	if ok, err := (guard{}).filter(nil); ok != nil || err != nil {
		t.Errorf("filter(nil) = %v, %v", ok, err)
	}
}

// CheckAddress tells what a fetch would be refused, resolving as the fetch
// does, without connecting.
func TestCheckAddress(t *testing.T) {
	c := newClient(t, HTTPOptions{Resolver: fakeResolver{
		"intranet.test": {"10.1.2.3"},
		"mixed.test":    {"10.1.2.3", "93.184.215.14"},
		"public.test":   {"93.184.215.14"},
	}})
	dials := neverDial(c)
	for u, want := range map[string]string{
		"http://127.0.0.1:8080/":   "blocked address 127.0.0.1 (loopback); pass --allow-private to permit",
		"http://intranet.test/x":   "blocked address 10.1.2.3 (private); pass --allow-private to permit",
		"https://[fe80::1%25en0]/": "blocked address fe80::1%en0 (link-local); pass --allow-private --allow-link-local to permit",
		"http://mixed.test/":       "",
		"http://public.test/":      "",
		"http://unknown.test/":     "", // the fetch reports the name
		"ftp://127.0.0.1/":         "", // the fetch reports the URL
	} {
		err := c.CheckAddress(context.Background(), u)
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
			t.Errorf("CheckAddress(%s) = %v, want %q", u, err, want)
		}
	}
	if d := dials(); len(d) != 0 {
		t.Errorf("dialed %v", d)
	}
}

// The Helm chart's NetworkPolicy denies exactly what the guard refuses by
// default: every address of every denied CIDR (first, last, middle) is
// refused, and every range the guard refuses lies within a denied CIDR. The
// one difference is by design: the chart denies all of ::ffff:0:0/96, while
// the guard judges a mapped address as the IPv4 address it is (a connection
// to ::ffff:8.8.8.8 is IPv4 to 8.8.8.8, which the chart's IPv4 list judges).
func TestChartDeniesWhatTheGuardRefuses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "charts", "trawler", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		NetworkPolicy struct {
			DeniedCIDRs   []string `yaml:"deniedCIDRs"`
			DeniedCIDRsV6 []string `yaml:"deniedCIDRsV6"`
		} `yaml:"networkPolicy"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	var denied []netip.Prefix
	for i, list := range [][]string{values.NetworkPolicy.DeniedCIDRs, values.NetworkPolicy.DeniedCIDRsV6} {
		for _, s := range list {
			p, err := netip.ParsePrefix(s)
			if err != nil || p != p.Masked() || p.Addr().Is4() != (i == 0) {
				t.Errorf("chart CIDR %q: %v (want a canonical IPv%d prefix)", s, err, 4+2*i)
				continue
			}
			denied = append(denied, p)
		}
	}
	if len(denied) < 10 {
		t.Fatalf("only %d denied CIDRs in values.yaml", len(denied))
	}
	deniedByChart := func(a netip.Addr) bool {
		for _, p := range denied {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	for _, p := range denied {
		first, last := p.Addr(), lastOf(p)
		mid := first
		if !p.IsSingleIP() {
			b := first.AsSlice()
			b[p.Bits()/8] ^= 0x80 >> (p.Bits() % 8) // the upper half's first address
			mid, _ = netip.AddrFromSlice(b)
		}
		for _, a := range []netip.Addr{first, mid, last} {
			if a.Is4In6() {
				a = a.Unmap()
				if !deniedByChart(a) {
					continue // a public IPv4 address
				}
			}
			if err := (guard{}).check(a); err == nil {
				t.Errorf("the chart denies %s (in %s); the guard lets it through", a, p)
			}
		}
	}
	for _, a := range boundaries() {
		if _, level := classify(a); level != public && !deniedByChart(a) {
			t.Errorf("the guard refuses %s; the chart's NetworkPolicy lets it through: add its range to values.yaml", a)
		}
	}
}
