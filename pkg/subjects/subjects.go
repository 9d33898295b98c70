// Package subjects names every NATS subject, stream and durable consumer of a
// crawl. All names derive from one prefix, so several crawls can share a NATS
// deployment. The layout is part of the public contract (docs/subjects.md).
package subjects

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// DefaultPrefix is the subject prefix used when none is configured.
const DefaultPrefix = "trawler"

var validPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// Names builds subject, stream and consumer names for one crawl.
type Names struct {
	Prefix string
	stream string // prefix as a stream-name fragment: dots become underscores
}

// New validates prefix and returns the names of that crawl.
func New(prefix string) (Names, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !validPrefix.MatchString(prefix) {
		return Names{}, fmt.Errorf("subject prefix %q: use letters, digits, '-', '_' and dots between tokens", prefix)
	}
	return Names{Prefix: prefix, stream: strings.ToUpper(strings.ReplaceAll(prefix, ".", "_"))}, nil
}

// Subjects.

// Discovered is where URLs of partition p go before dedup.
func (n Names) Discovered(p int) string { return fmt.Sprintf("%s.discovered.%d", n.Prefix, p) }

// FrontierNew is where dedup sends new URLs of partition p.
func (n Names) FrontierNew(p int) string { return fmt.Sprintf("%s.frontier.%d.new", n.Prefix, p) }

// FrontierDone is where fetchers report finished tasks of partition p.
func (n Names) FrontierDone(p int) string { return fmt.Sprintf("%s.frontier.%d.done", n.Prefix, p) }

// Ended is where a fetcher in another process tells partition p's frontier
// of a fetch's end the moment it has the response, ahead of the done report
// (core NATS, no stream: a hint, lost if nobody listens).
func (n Names) Ended(p int) string { return fmt.Sprintf("%s.ended.%d", n.Prefix, p) }

// Frontier is the filter of everything partition p's frontier consumes.
func (n Names) Frontier(p int) string { return fmt.Sprintf("%s.frontier.%d.*", n.Prefix, p) }

// Fetch is where the frontier issues fetch tasks of partition p.
func (n Names) Fetch(p int) string { return fmt.Sprintf("%s.fetch.%d", n.Prefix, p) }

// PagesFetched carries every fetched page (raw body, metadata header).
func (n Names) PagesFetched() string { return n.Prefix + ".pages.fetched" }

// PagesParsed carries the parser's JSON document per page.
func (n Names) PagesParsed() string { return n.Prefix + ".pages.parsed" }

// WorkStreams are the streams with work-queue retention, each with a block
// keeper (Keeper).
func (n Names) WorkStreams() []string {
	return []string{n.StreamDiscovered(), n.StreamFrontier(), n.StreamFetch()}
}

// Keeper is the subject of the block keeper of the work stream called
// stream (bus.KeepBlocks): one message of that stream no consumer is given.
func (n Names) Keeper(stream string) string { return n.Prefix + ".keep." + stream }

// DeadLetter is where a service parks messages it cannot process.
func (n Names) DeadLetter(service string) string { return n.Prefix + ".dlq." + service }

// Kind tells which message kind (messages.KindDiscovered, ...) subject
// carries, for messages.DecodeKind; "" for a subject that is not one of this
// crawl's (another prefix, a wildcard, a name it does not define). On
// pages.fetched the kind is KindPage: the message's Trawler-Page header
// holds the page, its data the body.
func (n Names) Kind(subject string) string {
	rest, ok := strings.CutPrefix(subject, n.Prefix+".")
	if !ok {
		return ""
	}
	t := strings.Split(rest, ".")
	partition := func(s string) bool {
		_, err := strconv.ParseUint(s, 10, 31)
		return err == nil
	}
	switch {
	case len(t) == 2 && t[0] == "discovered" && partition(t[1]):
		return messages.KindDiscovered
	case len(t) == 3 && t[0] == "frontier" && partition(t[1]) && t[2] == "new":
		return messages.KindNew
	case len(t) == 3 && t[0] == "frontier" && partition(t[1]) && t[2] == "done":
		return messages.KindDone
	case len(t) == 2 && t[0] == "ended" && partition(t[1]):
		return messages.KindDone
	case len(t) == 2 && t[0] == "fetch" && partition(t[1]):
		return messages.KindTask
	case rest == "pages.fetched":
		return messages.KindPage
	case rest == "pages.parsed":
		return messages.KindParsed
	case len(t) == 2 && t[0] == "dlq" && t[1] != "" && t[1] != "*" && t[1] != ">":
		return messages.KindDeadLetter
	}
	return ""
}

// Streams.

func (n Names) StreamDiscovered() string { return n.stream + "_DISCOVERED" }
func (n Names) StreamFrontier() string   { return n.stream + "_FRONTIER" }
func (n Names) StreamFetch() string      { return n.stream + "_FETCH" }
func (n Names) StreamPages() string      { return n.stream + "_PAGES" }
func (n Names) StreamParsed() string     { return n.stream + "_PARSED" }
func (n Names) StreamDLQ() string        { return n.stream + "_DLQ" }

// ScopeBucket is the JetStream key-value bucket holding the crawl's scope.
func (n Names) ScopeBucket() string { return n.stream + "_SCOPE" }

// RobotsBucket is the JetStream key-value bucket of robots.txt answers.
func (n Names) RobotsBucket() string { return n.stream + "_ROBOTS" }

// IPBucket is the JetStream key-value bucket of per-IP politeness leases.
func (n Names) IPBucket() string { return n.stream + "_IPS" }

// OwnersBucket is the JetStream key-value bucket of partition leases and
// replica heartbeats of the stateful services (pkg/ownership).
func (n Names) OwnersBucket() string { return n.stream + "_OWNERS" }

// Durable consumers.

func (n Names) ConsumerDedup(p int) string    { return fmt.Sprintf("dedup-%d", p) }
func (n Names) ConsumerFrontier(p int) string { return fmt.Sprintf("frontier-%d", p) }
func (n Names) ConsumerFetcher() string       { return "fetcher" }
func (n Names) ConsumerParser() string        { return "parser" }
