package urlx

import (
	"slices"
	"strings"
)

// TrackingParams are query parameters that name a visitor, a session or a
// campaign rather than a resource; Rules.DropParams may use them (the
// --drop-params value "tracking" stands for this list).
var TrackingParams = []string{
	"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id",
	"gclid", "dclid", "fbclid", "msclkid", "yclid", "mc_cid", "mc_eid", "_ga", "_hsenc", "_hsmi",
	"jsessionid", "phpsessid", "aspsessionid", "sid", "sessionid", "cfid", "cftoken",
}

// Rules are the optional parts of the canonical form, chosen per crawl:
// they apply on top of Canonicalize, to canonical URLs, and keep them
// canonical. Like the rest of the canonical form they key the crawl, so a
// crawl must keep them for its whole life.
type Rules struct {
	// SortQuery sorts the query's parameters (stably, by name), so that
	// ?b=1&a=2 and ?a=2&b=1 are one URL. Off by default: some servers read
	// parameters in order.
	SortQuery bool
	// DropParams are parameter names (ASCII case-insensitive) removed from
	// the query, and from ";name=value" path parameters (";jsessionid=").
	DropParams []string
}

// Active reports whether the rules change anything.
func (r Rules) Active() bool { return r.SortQuery || len(r.DropParams) > 0 }

// Apply applies the rules to a canonical URL (the result of Canonicalize or
// Resolve). It is idempotent.
func (r Rules) Apply(canonical string) string {
	if !r.Active() {
		return canonical
	}
	rest, query, hasQuery := strings.Cut(canonical, "?")
	if len(r.DropParams) > 0 {
		rest = r.dropPathParams(rest)
	}
	if !hasQuery {
		return rest
	}
	params := strings.Split(query, "&")
	if len(r.DropParams) > 0 {
		params = slices.DeleteFunc(params, func(p string) bool {
			name, _, _ := strings.Cut(p, "=")
			return r.drops(name)
		})
	}
	if r.SortQuery {
		params = slices.DeleteFunc(params, func(p string) bool { return p == "" })
		slices.SortStableFunc(params, func(a, b string) int {
			an, _, _ := strings.Cut(a, "=")
			bn, _, _ := strings.Cut(b, "=")
			return strings.Compare(an, bn)
		})
	}
	if len(params) == 0 {
		return rest
	}
	return rest + "?" + strings.Join(params, "&")
}

func (r Rules) drops(name string) bool {
	for _, d := range r.DropParams {
		if strings.EqualFold(name, d) {
			return true
		}
	}
	return false
}

// dropPathParams removes ";name=value" parameters named in DropParams from
// the last path segment ("/a;jsessionid=XYZ" -> "/a").
func (r Rules) dropPathParams(u string) string {
	slash := strings.LastIndexByte(u, '/')
	semi := strings.IndexByte(u[slash+1:], ';')
	if slash < 0 || semi < 0 {
		return u
	}
	seg := u[slash+1:]
	parts := strings.Split(seg, ";")
	kept := parts[:1]
	for _, p := range parts[1:] {
		name, _, _ := strings.Cut(p, "=")
		if !r.drops(name) {
			kept = append(kept, p)
		}
	}
	return u[:slash+1] + strings.Join(kept, ";")
}
