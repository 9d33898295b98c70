package parser

import "strings"

// Agent is the product token robots directives may be addressed to
// (<meta name=trawler>, "X-Robots-Tag: trawler: nofollow").
const Agent = "trawler"

// robotsDirectives reads the noindex and nofollow directives of a robots
// meta tag's content or an X-Robots-Tag header. In the header, "bot:" before
// directives addresses them (and those after them) to one crawler; they
// apply to us when bot is Agent. "none" means both.
func robotsDirectives(v string, header bool) (noindex, nofollow bool) {
	applies := true
	for _, part := range strings.Split(v, ",") {
		part = strings.ToLower(strings.TrimSpace(part))
		if header {
			if name, rest, ok := strings.Cut(part, ":"); ok && !colonDirective(name) {
				applies = strings.TrimSpace(name) == Agent
				part = strings.TrimSpace(rest)
			}
		}
		if !applies {
			continue
		}
		for _, d := range strings.Fields(part) { // some sites separate with spaces
			switch d {
			case "noindex":
				noindex = true
			case "nofollow":
				nofollow = true
			case "none":
				noindex, nofollow = true, true
			}
		}
	}
	return noindex, nofollow
}

// colonDirective reports whether name is a directive that takes a value
// after a colon, not a crawler's name.
func colonDirective(name string) bool {
	switch strings.TrimSpace(name) {
	case "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview":
		return true
	}
	return false
}

// relHas reports whether a rel attribute's space-separated list holds token.
func relHas(rel, token string) bool {
	for _, t := range strings.Fields(rel) {
		if strings.EqualFold(t, token) {
			return true
		}
	}
	return false
}
