package parser

import (
	"fmt"
	"strings"
)

// Kind is the element (and attribute) a link came from. Each kind can be
// switched on or off (--link-kinds).
type Kind uint16

const (
	KindA       Kind = 1 << iota // <a href>
	KindArea                     // <area href>
	KindLink                     // <link href> (stylesheets, alternates, canonical...)
	KindImg                      // <img src|srcset>, <source src|srcset>
	KindIframe                   // <iframe src>
	KindFrame                    // <frame src>
	KindScript                   // <script src>
	KindForm                     // <form action> of a GET form
	KindRefresh                  // <meta http-equiv=refresh content="n; url=...">
)

// DefaultKinds are the kinds that lead to other HTML pages.
const DefaultKinds = KindA | KindArea | KindIframe | KindFrame | KindRefresh

// AllKinds switches every kind on.
const AllKinds = KindA | KindArea | KindLink | KindImg | KindIframe | KindFrame | KindScript | KindForm | KindRefresh

var kindNames = []struct {
	k    Kind
	name string
}{
	{KindA, "a"}, {KindArea, "area"}, {KindLink, "link"}, {KindImg, "img"}, {KindIframe, "iframe"},
	{KindFrame, "frame"}, {KindScript, "script"}, {KindForm, "form"}, {KindRefresh, "refresh"},
}

// KindNames lists the valid names of ParseKinds.
func KindNames() []string {
	out := make([]string, len(kindNames))
	for i, kn := range kindNames {
		out[i] = kn.name
	}
	return out
}

// String names a single kind, or lists a set joined by commas.
func (k Kind) String() string {
	var names []string
	for _, kn := range kindNames {
		if k&kn.k != 0 {
			names = append(names, kn.name)
		}
	}
	return strings.Join(names, ",")
}

// ParseKinds reads kind names (a, area, link, img, iframe, frame, script,
// form, refresh; "all" for every kind).
func ParseKinds(names []string) (Kind, error) {
	var k Kind
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "all" {
			k |= AllKinds
			continue
		}
		found := false
		for _, kn := range kindNames {
			if kn.name == n {
				k |= kn.k
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("link kind %q: want all or one of %v", n, KindNames())
		}
	}
	return k, nil
}
