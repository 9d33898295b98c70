package urlx

import (
	"testing"
)

func TestRules(t *testing.T) {
	track := Rules{DropParams: TrackingParams, DropSessionSegments: true}
	sortq := Rules{SortQuery: true}
	both := Rules{SortQuery: true, DropParams: TrackingParams}
	tests := []struct {
		r        Rules
		in, want string
	}{
		{Rules{}, "http://a/?b=1&a=2", "http://a/?b=1&a=2"},
		{sortq, "http://a/?b=1&a=2&a=1", "http://a/?a=2&a=1&b=1"}, // stable: repeated names keep their order
		{sortq, "http://a/?&&b&a", "http://a/?a&b"},
		{sortq, "http://a/?", "http://a/"},
		{track, "http://a/p?utm_source=x&id=7&UTM_Medium=y&fbclid=z", "http://a/p?id=7"},
		{track, "http://a/p?utm_source=x", "http://a/p"},
		{track, "http://a/p;jsessionid=ABC?x=1", "http://a/p?x=1"},
		{track, "http://a/p;v=2;JSESSIONID=1", "http://a/p;v=2"},
		{track, "http://a/dir;sid=1/p", "http://a/dir;sid=1/p"}, // only the last segment's parameters
		{both, "http://a/?z=1&gclid=2&b=3", "http://a/?b=3&z=1"},
		// Session IDs (issue 18): every spelling of the servers that put
		// them in URLs, in the query and as path parameters.
		{track, "http://a/p?PHPSESSID=0123456789abcdef&id=7", "http://a/p?id=7"},
		{track, "http://a/p?phpsessid=x&sid=1&SessionID=2&session_id=3&sessid=4", "http://a/p"},
		{track, "http://a/p;jsessionid=8D2F1E3A9B7C?x=1", "http://a/p?x=1"},
		{track, "http://a/p;JSESSIONID=8D2F1E3A9B7C.node1", "http://a/p"},
		{track, "http://a/dir/;jsessionid=1", "http://a/dir/"},
		// What is left a dot segment is resolved, as in a canonical URL.
		{track, "http://a/.;jsessionid", "http://a/"},
		{track, "http://a/b/c/..;jsessionid=1?x=1", "http://a/b/?x=1"},
		{track, "http://a/b/%2e;jsessionid=1", "http://a/b/"},
		{track, "http://a/p?ASPSESSIONIDQQGGGNCG=LBDGOPABCDEF&x=1", "http://a/p?x=1"}, // classic ASP: the suffix varies
		{track, "http://a/p?aspsessionid=1", "http://a/p"},
		{track, "http://a/p?ASP.NET_SessionId=abc&x=1", "http://a/p?x=1"},
		{track, "http://a/p?CFID=1&CFTOKEN=2&osCsid=3&zenid=4&page=2", "http://a/p?page=2"},
		{track, "http://a/p?aspsession=1&sidebar=2&side=3", "http://a/p?aspsession=1&sidebar=2&side=3"}, // whole names, or the prefix
		// ASP.NET cookieless sessions: the identifier is a path segment.
		{track, "http://a/(S(lit3py55t21z5v55vlm25s55))/default.aspx?x=1", "http://a/default.aspx?x=1"},
		{track, "http://a/app/(X(1)S(lit3py55t21z5v55vlm25s55))/orders/", "http://a/app/orders/"},
		{track, "http://a/app/(A(abc)F(def))", "http://a/app/"},
		{track, "http://a/(S(x))/", "http://a/"},
		{track, "http://a/(S(x))", "http://a/"},
		{track, "http://a/(see)/(S(x)/(S(x)y)/(S)/()/(12(x))", "http://a/(see)/(S(x)/(S(x)y)/(S)/()/(12(x))"}, // not identifiers
		{Rules{DropParams: TrackingParams}, "http://a/(S(x))/p?sid=1", "http://a/(S(x))/p"},                   // segments only with DropSessionSegments
	}
	for _, tt := range tests {
		got := tt.r.Apply(tt.in)
		if got != tt.want {
			t.Errorf("%+v.Apply(%q) = %q, want %q", tt.r, tt.in, got, tt.want)
		}
		if again := tt.r.Apply(got); again != got {
			t.Errorf("not idempotent: %q -> %q", got, again)
		}
		if c, err := Canonicalize(got); err != nil || c != got {
			t.Errorf("%q is no longer canonical: %q, %v", got, c, err)
		}
	}
}

// FuzzCanonicalRules: canonicalization and the optional rules are
// idempotent and keep URLs canonical, whatever the input.
func FuzzCanonicalRules(f *testing.F) {
	for _, s := range []string{"http://a/?b=1&a=2", "http://a/p;jsessionid=1?utm_source=x", "HTTP://ex.com:80/%7e/../a?&&", "http://a/(S(x))/(A(y)F(z))/p?ASPSESSIONIDAB=1"} {
		f.Add(s)
	}
	r := Rules{SortQuery: true, DropParams: TrackingParams, DropSessionSegments: true}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Canonicalize(s)
		if err != nil {
			return
		}
		if c2, err := Canonicalize(c); err != nil || c2 != c {
			t.Fatalf("Canonicalize not idempotent: %q -> %q -> %q (%v)", s, c, c2, err)
		}
		a := r.Apply(c)
		if a2 := r.Apply(a); a2 != a {
			t.Fatalf("Apply not idempotent: %q -> %q -> %q", c, a, a2)
		}
		if c3, err := Canonicalize(a); err != nil || c3 != a {
			t.Fatalf("Apply(%q) = %q is not canonical: %q, %v", c, a, c3, err)
		}
	})
}
