package crawlstate

import (
	"fmt"
	"time"
)

// StallAfter is how long a crawl that is not over may stand still before
// whoever watches it (trawler run, status --wait) says what it waits for.
const StallAfter = 30 * time.Second

// Stall tells when a crawl that is not over stopped moving, and what it
// waits for: once it has stood still for After, and again every After while
// it lasts. A wait nobody explains looks like a hang.
type Stall struct {
	After time.Duration
	prev  *Snapshot
	moved time.Time // when the crawl last moved
	said  time.Time // when the stall was last said
}

// See takes the next snapshot and returns the line to say, if one is due:
// "the crawl has not moved for 30s; it waits for: 1 tasks in flight (...)".
func (n *Stall) See(s Snapshot) (string, bool) {
	if n.prev == nil || !n.prev.Still(s) || s.Idle() {
		n.moved, n.said = s.At, time.Time{}
	}
	n.prev = &s
	if still := s.At.Sub(n.moved); still >= n.After && s.At.Sub(n.said) >= n.After {
		n.said = s.At
		return fmt.Sprintf("the crawl has not moved for %s; it waits for: %s", still.Round(time.Second), s.Waiting()), true
	}
	return "", false
}

// RobotsWait is what a stall line adds when origins' robots.txt is
// unreachable: their URLs stay queued until it answers or the origin is
// given up (three unreachable answers, --robots-retry apart), which is
// most often what a crawl that stands still near its end waits for.
// settled is how long until the last of them is given up if none answers
// (0: not known); last, when known, is the latest answer of one of them
// ("origin: error"), which most often says what to fix (a DNS server that
// does not answer, a proxy that refuses).
func RobotsWait(retrying int, settled time.Duration, last string) string {
	if retrying <= 0 {
		return ""
	}
	who := fmt.Sprintf("%d origins retry", retrying)
	if retrying == 1 {
		who = "1 origin retries"
	}
	line := fmt.Sprintf("; %s an unreachable robots.txt, their URLs queued until it answers or the origin is given up (3 tries, --robots-retry apart)", who)
	if settled > 0 {
		line += fmt.Sprintf(", all settled within %s", settled.Round(time.Second))
	}
	if last != "" {
		line += "; the last answer: " + last
	}
	return line
}
