// Package urlx turns the URLs a crawler meets into one canonical form, and
// derives from it the keys the pipeline routes by: the host, its partition and
// a 64-bit fingerprint.
//
// The canonical form below is part of a crawl's contract: fingerprints, the
// seen set and partitions are computed from it, so changing it re-keys a
// crawl. Canonicalize and Resolve apply it:
//
//   - only http and https; scheme and host lowercased;
//   - leading and trailing C0 controls and spaces stripped, tabs and newlines
//     removed, '\' read as '/' before the query (what browsers do with hrefs);
//   - host: percent-decoded, IDNA to ASCII (UTS #46 non-transitional with no
//     STD3 or hyphen rules, as in the WHATWG URL standard; a subset, see
//     idna.go), trailing dots dropped, names DNS cannot carry (empty or
//     over-long labels) refused, IPv4 in any WHATWG notation (0x7f.1,
//     2130706433) written as dotted decimal, IPv6 compressed; userinfo
//     dropped; default port dropped;
//   - path: "/" when empty; percent-encoding normalized (hex upper-cased,
//     unreserved characters decoded, a '%' that starts no escape written as
//     %25, characters browsers escape escaped); dot segments resolved;
//   - query kept as it is, order and escapes included: only characters that may
//     not appear in a URL are escaped (as browsers do), since servers may
//     compare the raw query (signed URLs);
//   - fragment removed.
package urlx

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// MaxLength bounds the URLs Canonicalize accepts and returns. It is a sanity
// bound against junk, far above what servers take; the crawl's configured
// URL length limit applies on top.
const MaxLength = 16 << 10

// ErrInvalid is wrapped by every error of this package: the URL is unusable.
var ErrInvalid = errors.New("invalid URL")

// ErrUnsupportedScheme is wrapped (along with ErrInvalid) when a URL is well
// formed but not http or https, such as mailto: or javascript: links.
var ErrUnsupportedScheme = fmt.Errorf("%w: unsupported scheme", ErrInvalid)

// commonSchemes are the other schemes links often have; their errors are
// made once.
var commonSchemes = func() map[string]error {
	m := map[string]error{}
	for _, s := range []string{"mailto", "javascript", "tel", "data", "ftp", "file", "sms", "whatsapp", "callto", "skype", "fax", "intent", "market", "itms-apps", "about", "blob", "ws", "wss"} {
		m[s] = newUnsupportedScheme(s)
	}
	return m
}()

// unsupportedScheme is the error for a lower-case scheme other than http(s).
func unsupportedScheme(scheme string) error {
	if err, ok := commonSchemes[scheme]; ok {
		return err
	}
	return newUnsupportedScheme(scheme)
}

func newUnsupportedScheme(scheme string) error {
	return fmt.Errorf("%w %q", ErrUnsupportedScheme, truncate(scheme, 32))
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Canonicalize returns the canonical form of an absolute http or https URL.
// Errors wrap ErrInvalid. It never panics and is idempotent.
func Canonicalize(raw string) (string, error) {
	return canonicalize(nil, raw)
}

// Resolve resolves href, a reference found in a page, against base (the page's
// URL or its <base href>) and canonicalizes the result. Surrounding whitespace
// is ignored, as HTML does. References to other schemes (javascript:, mailto:,
// data:, tel: ...) return an error wrapping ErrUnsupportedScheme. A nil base,
// or one that is not an absolute http(s) URL, only accepts absolute URLs.
func Resolve(base *url.URL, href string) (string, error) {
	if base == nil {
		return canonicalize(nil, href)
	}
	b, err := newBase(base)
	if err != nil {
		if _, _, absolute := splitScheme(clean(href)); absolute {
			return canonicalize(nil, href) // needs no base
		}
		return "", err
	}
	return canonicalize(b, href)
}

// Base is a base URL prepared for resolving many references, such as the
// links of one page: its parts and canonical host are worked out once.
type Base struct{ b *baseURL }

// NewBase prepares u, an absolute http(s) URL, as a base.
func NewBase(u *url.URL) (*Base, error) {
	b, err := newBase(u)
	if err != nil {
		return nil, err
	}
	return &Base{b}, nil
}

// Resolve is urlx.Resolve against this base.
func (b *Base) Resolve(href string) (string, error) { return canonicalize(b.b, href) }

// baseURL holds the parts of a base URL that relative references inherit.
type baseURL struct {
	scheme, host, path, query string
	hasQuery                  bool
	hostport                  string // host, canonical

	// For fastCanonicalize: whether relative references may take the fast
	// path (the path and query are canonical, net/url reads the host as
	// ours), and the path's directory without its last '/' ("/a/b" for
	// "/a/b/c") with its number of segments.
	fast        bool
	dir         string
	dirSegments int
}

func newBase(u *url.URL) (*baseURL, error) {
	scheme := strings.ToLower(u.Scheme)
	if !isWebScheme(scheme) || u.Host == "" || u.Opaque != "" {
		return nil, invalid("base is not an absolute http(s) URL")
	}
	hostport, err := canonicalHostPort(scheme, u.Host)
	if err != nil {
		return nil, err
	}
	b := &baseURL{
		scheme:   scheme,
		host:     u.Host,
		hostport: hostport,
		path:     u.EscapedPath(),
		query:    u.RawQuery,
		hasQuery: u.RawQuery != "" || u.ForceQuery,
	}
	b.fast = (b.path == "" || plainPath(b.path)) && (!b.hasQuery || plainQuery(b.query)) && b.stdlibReadsHost()
	if i := strings.LastIndexByte(b.path, '/'); i > 0 {
		b.dir = b.path[:i]
		b.dirSegments = strings.Count(b.dir, "/")
	}
	return b, nil
}

// stdlibReadsHost reports whether net/url reads the host of URLs on this
// base (with a canonical path and query) as the base's canonical host: a
// plain one (IsCanonical's rules), or one net/url was asked about.
func (b *baseURL) stdlibReadsHost() bool {
	host, port, hasPort := strings.Cut(b.hostport, ":")
	def := "80"
	if b.scheme == "https" {
		def = "443"
	}
	if plainHost(host) && (!hasPort || plainPort(port, def)) {
		return true
	}
	return checkStdlib(b.scheme+"://"+b.hostport+"/", b.hostport) == nil
}

func isWebScheme(s string) bool { return s == "http" || s == "https" }

// canonicalize resolves s against base (nil: s must be absolute) and
// canonicalizes it: ordinary references on the fast path
// (fast_canonicalize.go), the others on the full one.
func canonicalize(base *baseURL, s string) (string, error) {
	if out, ok := fastCanonicalize(base, s); ok {
		return out, nil
	}
	return canonicalizeFull(base, s)
}

// canonicalizeFull follows the WHATWG URL parser for special schemes where it
// decides what a reference means, then applies the canonical rules.
func canonicalizeFull(base *baseURL, s string) (string, error) {
	s = clean(s)
	scheme, rest, ok := splitScheme(s)
	if ok {
		scheme = strings.ToLower(scheme)
		if !isWebScheme(scheme) {
			return "", unsupportedScheme(scheme)
		}
	}
	if len(s) > MaxLength {
		return "", invalid("longer than %d bytes", MaxLength)
	}
	if ok {
		rest = backslashes(rest)
		// "http:foo" is relative to an http base, but an authority elsewhere,
		// with any number of slashes.
		if base == nil || base.scheme != scheme || strings.HasPrefix(rest, "//") {
			return absolute(scheme, strings.TrimLeft(rest, "/"))
		}
		s = rest
	} else {
		if base == nil {
			return "", invalid("relative reference without a base URL")
		}
		s = backslashes(s)
	}
	if strings.HasPrefix(s, "//") { // scheme-relative
		return absolute(base.scheme, strings.TrimLeft(s, "/"))
	}
	// Same host as the base: its canonical form is known.
	merged := base.merge(s)
	if i := strings.IndexByte(merged, '#'); i >= 0 {
		merged = merged[:i]
	}
	path, query, hasQuery := strings.Cut(merged, "?")
	return assemble(base.scheme, base.hostport, path, query, hasQuery)
}

// merge resolves a reference that has neither scheme nor authority against
// the base path and query (RFC 3986 section 5.2.2); dot segments are left to
// the path canonicalization. The result starts with the path.
func (b *baseURL) merge(ref string) string {
	i := strings.IndexAny(ref, "?#")
	if i < 0 {
		i = len(ref)
	}
	refPath, tail := ref[:i], ref[i:]
	var path string
	switch {
	case refPath == "":
		path = b.path
		if tail == "" || tail[0] == '#' { // no query of its own: keep the base's
			if b.hasQuery {
				tail = "?" + b.query
			} else {
				tail = ""
			}
		}
	case refPath[0] == '/':
		path = refPath
	default:
		path = b.path[:strings.LastIndexByte(b.path, '/')+1] + refPath
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return path + tail
}

// absolute canonicalizes "<authority><path>?<query>#<fragment>" of scheme.
func absolute(scheme, rest string) (string, error) {
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	hostport, err := canonicalHostPort(scheme, authority)
	if err != nil {
		return "", err
	}
	return assemble(scheme, hostport, path, query, hasQuery)
}

// assemble builds the URL from a canonical host and a raw path and query.
func assemble(scheme, hostport, path, query string, hasQuery bool) (string, error) {
	var b strings.Builder
	b.Grow(len(scheme) + 3 + len(hostport) + len(path) + len(query) + 8)
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(hostport)
	b.WriteString(canonicalPath(path))
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(escapeQuery(query))
	}
	out := b.String()
	if len(out) > MaxLength {
		return "", invalid("longer than %d bytes", MaxLength)
	}
	if IsCanonical(out) { // plain characters only: net/url agrees (fuzzed)
		return out, nil
	}
	return out, checkStdlib(out, hostport)
}

// checkStdlib makes sure net/url (and so net/http) reads our URL as we do.
func checkStdlib(canonical, hostport string) error {
	u, err := url.Parse(canonical)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return invalid("rejected by net/url: %v", err)
	}
	if u.Host != hostport {
		return invalid("net/url reads host %q", truncate(u.Host, 64))
	}
	return nil
}

// clean strips what the WHATWG parser strips: leading and trailing C0
// controls and spaces, and every tab and newline.
func clean(s string) string {
	start, end := 0, len(s)
	for start < end && s[start] <= ' ' {
		start++
	}
	for end > start && s[end-1] <= ' ' {
		end--
	}
	s = s[start:end]
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
	}
	return s
}

// splitScheme splits "scheme:rest" when s starts with an RFC 3986 scheme.
func splitScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], s[i+1:], true
		default:
			return "", s, false
		}
	}
	return "", s, false
}

// backslashes turns '\' into '/' before the query or fragment, as browsers
// do for http(s) URLs.
func backslashes(s string) string {
	end := strings.IndexAny(s, "?#")
	if end < 0 {
		end = len(s)
	}
	if strings.IndexByte(s[:end], '\\') < 0 {
		return s
	}
	return strings.ReplaceAll(s[:end], `\`, "/") + s[end:]
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
