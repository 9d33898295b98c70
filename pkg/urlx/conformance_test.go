package urlx

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The WHATWG URL test vectors (web-platform-tests urltestdata.json), from the
// shared conformance folder beside the checkout; see
// ../shared/conformance/README.md and url/ORIGIN.md there.
//
// Every one of the 891 vectors is checked (the test fails if one is left
// out):
//   - nothing panics, on any vector;
//   - vectors of other schemes (377 must-parse, 69 must-fail) are refused
//     with ErrUnsupportedScheme: a crawler neither fetches nor parses them.
//     This is the one class knowingly not compared with the WHATWG result;
//   - for http and https:
//      - every must-fail vector whose scheme (the input's, else the base's) is
//        http(s) is rejected;
//      - every must-parse vector whose result is http(s) is accepted, and our
//        scheme, host, path and query equal the expected protocol, host,
//        pathname and search, once the expected values are put through our
//        intentional differences (canonicalExpected; userinfo and fragment are
//        dropped by design and not compared).
//
// Results (wpt snapshot of 2026-07-11): 198 of 198 http(s) must-fail
// vectors rejected; 242 of 247 http(s) must-parse vectors accepted, all 242
// agreeing; the 5 others are the known differences below; 446 of 446
// other-scheme vectors refused.
//
// Vectors we knowingly decide otherwise are listed in knownDifferences with
// the reason; the test fails when one of them starts to agree, so the list
// stays current.

type wptCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Failure  bool    `json:"failure"`
	Href     string  `json:"href"`
	Protocol string  `json:"protocol"`
	Host     string  `json:"host"`
	Pathname string  `json:"pathname"`
	Search   string  `json:"search"`
}

func (c wptCase) key() string {
	if c.Base == nil {
		return fmt.Sprintf("%q", c.Input)
	}
	return fmt.Sprintf("%q against %q", c.Input, *c.Base)
}

// knownDifferences maps vector keys (input, or input against base) to why we
// differ from the WHATWG result.
var knownDifferences = map[string]string{
	// A host of only dots names no server; we refuse it as an empty host.
	`"http://./"`:  "host of only dots",
	`"http://../"`: "host of only dots",
	// WHATWG keeps "foo.09.." as a domain (its last label is empty); we drop
	// trailing dots first, so "foo.09" must be an IPv4 address, and is not.
	// Empty labels are refused in any case (DNS lengths are checked).
	`"http://foo.09.."`: "trailing dots dropped before the IPv4 test",
	// net/url (so net/http) refuses '`', '{' and '}' in a host; a URL the
	// fetcher cannot request is of no use.
	"\"http://!\\\"$&'()*+,-.;=_`{}~/\"": "host characters net/url refuses",
	// Since 2025 WHATWG keeps an ASCII "xn--" label that is not valid
	// Punycode; we refuse hosts that fail IDNA.
	`"https://xn--/"`: "invalid Punycode label",
}

// conformanceDir finds <project root>/../shared/conformance, or
// $CONFORMANCE_DIR, and skips the test when it is absent.
func conformanceDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("CONFORMANCE_DIR"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "conformance")
			if _, err := os.Stat(d); err != nil {
				if os.Getenv("TRAWLER_CI") != "" {
					t.Fatalf("conformance data not found at %s; CI always has it", d)
				}
				t.Skipf("conformance data not found at %s (expected beside the checkout)", d)
			}
			return d
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

func loadWPT(t *testing.T) []wptCase {
	raw, err := os.ReadFile(filepath.Join(conformanceDir(t), "url", "urltestdata.json"))
	if err != nil {
		t.Fatalf("conformance data: %v", err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	var cases []wptCase
	for _, e := range entries {
		if len(e) > 0 && e[0] == '"' {
			continue // a comment
		}
		var c wptCase
		if err := json.Unmarshal(e, &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	return cases
}

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// effectiveScheme is the scheme a vector's result would have: the input's,
// else the base's (lowercase, "" when neither has one).
func effectiveScheme(c wptCase) string {
	in := strings.Trim(c.Input, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	in = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(in)
	if m := schemeRE.FindStringSubmatch(in); m != nil {
		return strings.ToLower(m[1])
	}
	if c.Base != nil {
		if m := schemeRE.FindStringSubmatch(*c.Base); m != nil {
			return strings.ToLower(m[1])
		}
	}
	return ""
}

// run resolves a vector with our code, turning a panic into an error.
func run(c wptCase) (got string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	if c.Base == nil {
		return Canonicalize(c.Input)
	}
	base, perr := url.Parse(*c.Base)
	if perr != nil {
		base = nil
	}
	return Resolve(base, c.Input)
}

// canonicalExpected applies our intentional differences to the expected
// host and pathname: trailing dots of the host dropped; path escapes
// normalized (upper-case hex, unreserved characters decoded, then the dot
// segments that decoding reveals resolved; a lone '%' escaped).
func canonicalExpected(c wptCase) (host, path string) {
	host = c.Host
	if !strings.HasPrefix(host, "[") {
		name, port, hasPort := strings.Cut(host, ":")
		host = strings.TrimRight(name, ".")
		if hasPort {
			host += ":" + port
		}
	}
	return host, canonicalPath(c.Pathname)
}

func TestWPTURLConformance(t *testing.T) {
	cases := loadWPT(t)
	var (
		failTotal, failRejected   int
		okTotal, okAccepted, okEq int
		otherFail, otherOK        int
		known                     = map[string]bool{}
	)
	for _, c := range cases {
		got, err := run(c)
		if err != nil && strings.HasPrefix(err.Error(), "PANIC") {
			t.Errorf("%s: %v", c.key(), err)
			continue
		}
		scheme := effectiveScheme(c)
		web := scheme == "http" || scheme == "https"
		var problem string
		switch {
		case c.Failure && !web:
			// Other schemes are refused whatever they hold.
			otherFail++
			if err == nil {
				problem = fmt.Sprintf("accepted as %q, want failure", got)
			}
		case !c.Failure && c.Protocol != "http:" && c.Protocol != "https:":
			// Knowingly skipped as a class: a URL of another scheme (file:,
			// ws:, data:, javascript:, mailto:, non-special schemes) is
			// not crawled, so Resolve and Canonicalize refuse it with
			// ErrUnsupportedScheme rather than parse it; that refusal is
			// what is checked. (A relative reference whose base has another
			// scheme is refused as having no usable base.)
			otherOK++
			if err == nil {
				problem = fmt.Sprintf("accepted as %q; other schemes must be refused", got)
			} else if !errors.Is(err, ErrInvalid) {
				problem = fmt.Sprintf("error %v does not wrap ErrInvalid", err)
			} else if !errors.Is(err, ErrUnsupportedScheme) && !strings.Contains(err.Error(), "base") {
				problem = fmt.Sprintf("refused for another reason (%v), want unsupported scheme", err)
			}
		case c.Failure && web:
			failTotal++
			if err == nil {
				problem = fmt.Sprintf("accepted as %q, want failure", got)
			} else {
				failRejected++
			}
		case !c.Failure && (c.Protocol == "http:" || c.Protocol == "https:"):
			okTotal++
			if err != nil {
				problem = fmt.Sprintf("rejected (%v), want %q", err, c.Href)
				break
			}
			okAccepted++
			wantHost, wantPath := canonicalExpected(c)
			host, _ := Host(got)
			u, _ := url.Parse(got)
			wantQuery := escapeQuery(strings.TrimPrefix(c.Search, "?")) // a lone '%' escaped
			if u.Scheme+":" != c.Protocol || host != wantHost || u.EscapedPath() != wantPath || u.RawQuery != wantQuery {
				problem = fmt.Sprintf("got %q (host %q, path %q, query %q), want host %q, path %q, query %q (href %q)",
					got, host, u.EscapedPath(), u.RawQuery, wantHost, wantPath, wantQuery, c.Href)
				break
			}
			okEq++
		default:
			continue
		}
		reason, listed := knownDifferences[c.key()]
		switch {
		case listed && problem == "":
			t.Errorf("%s: listed as a known difference (%s) but now agrees; remove it from the list", c.key(), reason)
		case listed:
			known[c.key()] = true
		case problem != "":
			t.Errorf("%s: %s", c.key(), problem)
		}
	}
	for k := range knownDifferences {
		if !known[k] {
			t.Errorf("known difference %s matches no failing vector", k)
		}
	}
	t.Logf("WPT http(s) must-fail vectors rejected: %d of %d", failRejected, failTotal)
	t.Logf("WPT http(s) must-parse vectors accepted: %d of %d; scheme, host, path and query agree: %d", okAccepted, okTotal, okEq)
	t.Logf("WPT other-scheme vectors, refused as unsupported: %d must-parse, %d must-fail", otherOK, otherFail)
	t.Logf("known differences: %d; vectors checked: %d of %d", len(knownDifferences), failTotal+okTotal+otherOK+otherFail, len(cases))
	if n := failTotal + okTotal + otherOK + otherFail; n != len(cases) {
		t.Errorf("%d of %d vectors were not checked", len(cases)-n, len(cases))
	}
	if failTotal < 190 || okTotal < 240 {
		t.Errorf("only %d must-fail and %d must-parse http(s) vectors: was the data file replaced?", failTotal, okTotal)
	}
}
