package fetcher

import (
	"github.com/nats-io/nats.go"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// EndsOnNATS is an Options.Ended for a fetcher whose frontier runs in
// another process: it publishes each fetch's end on core NATS
// (subjects.Names.Ended), where the partition's frontier listens, ahead of
// the done report that the page's results hold back. A hint only: nothing
// stores it, and a frontier that does not hear it waits for the done report.
func EndsOnNATS(nc *nats.Conn, names subjects.Names) func(messages.FetchDone) {
	return func(fd messages.FetchDone) {
		if fd.Expired || fd.Retry {
			return // the frontier ignores those: spare the message
		}
		data, err := messages.Encode(&fd)
		if err != nil {
			return
		}
		_ = nc.Publish(names.Ended(fd.Partition), data) // a closed connection: the done report will not go either
	}
}
