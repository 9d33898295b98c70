package urlx

import (
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/net/publicsuffix"
)

// Host returns the host key of a canonical URL: the host with its port when
// the port is not the scheme's default (u.Host), e.g. "example.com" or
// "example.com:8080". Politeness, partitioning and per-host queues use it.
func Host(canonical string) (string, error) {
	if h, ok := hostKey(canonical, true); ok { // the common case: no parse
		return h, nil
	}
	u, err := url.Parse(canonical)
	if err != nil {
		return "", invalid("host of %q: unparsable", truncate(canonical, 64))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", invalid("host of %q: not an http(s) URL", truncate(canonical, 64))
	}
	return u.Host, nil
}

// Partition returns the host partition of host (as returned by Host) among p:
// xxhash64(host) mod p, so that every URL of a host meets the same dedup and
// frontier owner (Mercator's host splitter).
//
// The function is part of the public contract: messages, subjects and stored
// state are keyed by it, so it must never change for a crawl, nor between
// versions that may share one. p must be positive (it panics otherwise, as
// a division by zero would).
func Partition(host string, p int) int {
	if p <= 0 {
		panic("urlx.Partition: partition count must be positive")
	}
	return int(xxhash.Sum64String(host) % uint64(p))
}

// Fingerprint returns the 64-bit fingerprint of a canonical URL: xxhash64 of
// the string. Two distinct URLs share one with probability 2^-64; among n URLs
// the odds of any collision are about n²/2^65 (1e9 URLs: about 3%), and a
// collision only makes the crawl skip one URL.
func Fingerprint(canonical string) uint64 {
	return xxhash.Sum64String(canonical)
}

// RegistrableDomain returns the registrable domain (eTLD+1, by the public
// suffix list) of a host, with or without a port: "www.example.co.uk:8080"
// gives "example.co.uk". For IP addresses, public suffixes themselves and
// names the list cannot place, it returns the host name without the port.
func RegistrableDomain(host string) string {
	name := hostname(host)
	if _, err := netip.ParseAddr(name); err == nil {
		return name
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(name)
	if err != nil {
		return name
	}
	return d
}

// hostname strips the port, IPv6 brackets and trailing dots, and lowercases.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimRight(host, "."))
}
