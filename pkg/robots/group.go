package robots

// Compiling a group: its rules sorted so that the first match decides,
// deduplicated and, in a large group, filed by their second byte.

import (
	"cmp"
	"slices"
)

// directoryMin is the group size from which rules are filed by their
// second byte; below it, scanning them all is as quick.
const directoryMin = 16

func compileGroup(arena string, gb *groupBuilder) *group {
	g := &group{delay: gb.delay, hasDelay: gb.hasDelay}
	rules := make([]rule, 0, len(gb.rules))
	for _, s := range gb.rules {
		pat := arena[s.off : s.off+s.n]
		r := compileRule(pat, s.allow)
		if s.dirIndex {
			r = newRule(pat, true, true)
		}
		if r.canMatch() {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		return g
	}
	useDir := len(rules) >= directoryMin
	// Sort positions rather than the rules themselves: moving structs that
	// hold pointers costs write barriers.
	order := make([]int32, len(rules))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int {
		a, b := &rules[i], &rules[j]
		if useDir {
			if c := cmp.Compare(a.bucket(), b.bucket()); c != 0 {
				return c
			}
		}
		return compareRules(a, b)
	})
	g.rules = make([]rule, 0, len(rules))
	for _, i := range order {
		if n := len(g.rules); n == 0 || g.rules[n-1] != rules[i] {
			g.rules = append(g.rules, rules[i])
		}
	}
	g.nscan = int32(len(g.rules))
	if !useDir {
		return g
	}
	var keys []byte
	for i := range g.rules {
		k := g.rules[i].bucket()
		switch {
		case k < 0:
			continue
		case len(keys) == 0:
			g.nscan = int32(i)
		case keys[len(keys)-1] == byte(k):
			continue
		}
		keys = append(keys, byte(k))
		g.starts = append(g.starts, int32(i))
	}
	if len(keys) > 0 {
		g.keys = string(keys)
		g.starts = slices.Clip(append(g.starts, int32(len(g.rules))))
	}
	return g
}
