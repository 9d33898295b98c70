package urlx

import (
	"testing"
)

func TestRules(t *testing.T) {
	track := Rules{DropParams: TrackingParams}
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
	for _, s := range []string{"http://a/?b=1&a=2", "http://a/p;jsessionid=1?utm_source=x", "HTTP://ex.com:80/%7e/../a?&&"} {
		f.Add(s)
	}
	r := Rules{SortQuery: true, DropParams: TrackingParams}
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
