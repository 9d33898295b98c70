package urlx

import (
	"slices"
	"strings"
)

// TrackingParams are query parameters that name a visitor, a session or a
// campaign rather than a resource; Rules.DropParams may use them (the
// --drop-params value "tracking" stands for this list, and also sets
// Rules.DropSessionSegments). The session IDs: Java servlets' jsessionid
// (mostly as ";jsessionid=" on the path), PHP's PHPSESSID, classic ASP's
// ASPSESSIONIDxxxxxxxx (eight letters vary per server), ASP.NET's
// ASP.NET_SessionId, ColdFusion's CFID and CFTOKEN, osCommerce's osCsid,
// Zen Cart's zenid, and the generic sid, sessid, sessionid, session_id.
var TrackingParams = []string{
	"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id",
	"gclid", "dclid", "fbclid", "msclkid", "yclid", "mc_cid", "mc_eid", "_ga", "_hsenc", "_hsmi",
	"jsessionid", "phpsessid", "aspsessionid*", "asp.net_sessionid", "sid", "sessid", "sessionid", "session_id",
	"cfid", "cftoken", "oscsid", "zenid",
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
	// A name ending in '*' is a prefix ("aspsessionid*").
	DropParams []string
	// DropSessionSegments removes the path segments ASP.NET's cookieless
	// sessions insert ("/(S(lit3py55t21z5v55vlm25s55))/page.aspx" ->
	// "/page.aspx"; also "(A(...))", "(F(...))" and their combinations).
	DropSessionSegments bool
}

// Active reports whether the rules change anything.
func (r Rules) Active() bool { return r.SortQuery || len(r.DropParams) > 0 || r.DropSessionSegments }

// Apply applies the rules to a canonical URL (the result of Canonicalize or
// Resolve). It is idempotent.
func (r Rules) Apply(canonical string) string {
	if !r.Active() {
		return canonical
	}
	rest, query, hasQuery := strings.Cut(canonical, "?")
	if r.DropSessionSegments {
		rest = dropSessionSegments(rest)
	}
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
		if prefix, ok := strings.CutSuffix(d, "*"); ok {
			if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
				return true
			}
		} else if strings.EqualFold(name, d) {
			return true
		}
	}
	return false
}

// dropSessionSegments removes ASP.NET cookieless session segments from the
// path of u (scheme, host and path; no query).
func dropSessionSegments(u string) string {
	if !strings.Contains(u, "))") {
		return u // the common case: nothing to look at
	}
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	p := strings.IndexByte(u[i+3:], '/')
	if p < 0 {
		return u
	}
	p += i + 3
	segs := strings.Split(u[p+1:], "/")
	kept := slices.DeleteFunc(slices.Clone(segs), isSessionSegment)
	if len(kept) == len(segs) {
		return u
	}
	if isSessionSegment(segs[len(segs)-1]) {
		kept = append(kept, "") // "/app/(S(x))" -> "/app/"
	}
	return u[:p] + "/" + strings.Join(kept, "/")
}

// isSessionSegment reports whether seg is an ASP.NET cookieless
// identifier: "(" then one or more "L(value)", L a letter, then ")".
func isSessionSegment(seg string) bool {
	inner, ok := strings.CutPrefix(seg, "(")
	if !ok {
		return false
	}
	if inner, ok = strings.CutSuffix(inner, ")"); !ok || inner == "" {
		return false
	}
	for inner != "" {
		if len(inner) < 3 || !('A' <= inner[0] && inner[0] <= 'Z' || 'a' <= inner[0] && inner[0] <= 'z') || inner[1] != '(' {
			return false
		}
		end := strings.IndexByte(inner, ')')
		if end < 0 || strings.ContainsAny(inner[2:end], "()") {
			return false
		}
		inner = inner[end+1:]
	}
	return true
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
	if len(kept) == len(parts) {
		return u
	}
	out := u[:slash+1] + strings.Join(kept, ";")
	// What is left may be a dot segment ("/.;jsessionid=1" -> "/.", also
	// spelled "%2e"), which a canonical URL has resolved: resolve it too.
	if c, err := Canonicalize(out); err == nil {
		return c
	}
	return out
}
