package fetcher

import (
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/pkg/messages"
)

// A fetch's end goes out on its partition's Ended subject, as the done
// report would read; ends the frontier ignores (expired, handed back) do not.
func TestEndsOnNATS(t *testing.T) {
	js, names := testbus.Start(t, 1)
	nc := js.Conn()
	sub, err := nc.SubscribeSync(names.Ended(3))
	if err != nil {
		t.Fatal(err)
	}
	ended := EndsOnNATS(nc, names)
	ended(messages.FetchDone{TaskID: "expired", Partition: 3, Expired: true})
	ended(messages.FetchDone{TaskID: "handed-back", Partition: 3, Retry: true})
	ended(messages.FetchDone{TaskID: "t1", Partition: 3, Host: "a.example", Status: 200})
	m, err := sub.NextMsg(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var fd messages.FetchDone
	if err := messages.Decode(m.Data, &fd); err != nil || fd.TaskID != "t1" || fd.Host != "a.example" || fd.Status != 200 {
		t.Fatalf("heard %+v (%v), want t1's end", fd, err)
	}
	if m, err := sub.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("another end heard: %s", m.Data)
	}
}
