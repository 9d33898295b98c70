package scope

import (
	"fmt"
	"regexp"
)

// Filter is the URL-level part of a crawl's scope, applied to canonical
// URLs after the host scope: deny patterns, allow patterns and a length
// bound. Patterns are Go regular expressions (RE2: linear time, so no
// pattern can be made to blow up on a hostile URL), unanchored; anchor them
// with ^ and $ as needed.
type Filter struct {
	allow, deny []*regexp.Regexp
	maxLength   int
}

// Verdicts of Filter.Check.
const (
	Allowed  = ""
	TooLong  = "too long"
	Denied   = "denied"
	NotAllow = "not allowed"
)

// NewFilter compiles the patterns. maxLength <= 0 means no bound.
func NewFilter(allow, deny []string, maxLength int) (*Filter, error) {
	f := &Filter{maxLength: maxLength}
	var err error
	if f.allow, err = compile("allow", allow); err != nil {
		return nil, err
	}
	if f.deny, err = compile("deny", deny); err != nil {
		return nil, err
	}
	return f, nil
}

func compile(what string, patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%s pattern %q: %w", what, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Check returns Allowed ("") when the URL passes: not longer than the
// bound, matching no deny pattern, and matching an allow pattern when there
// are any. Otherwise it says why not.
func (f *Filter) Check(url string) string {
	if f == nil {
		return Allowed
	}
	if f.maxLength > 0 && len(url) > f.maxLength {
		return TooLong
	}
	for _, re := range f.deny {
		if re.MatchString(url) {
			return Denied
		}
	}
	if len(f.allow) == 0 {
		return Allowed
	}
	for _, re := range f.allow {
		if re.MatchString(url) {
			return Allowed
		}
	}
	return NotAllow
}
