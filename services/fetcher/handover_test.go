package fetcher

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testbus"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// A page handed over in process is durable through its task alone: until
// the parser settles it, the task stays unacked (a crash would redeliver
// it and fetch again) and the frontier hears nothing; once parsed, the
// done report goes out and the task is acked. The page never enters the
// pages stream.
func TestHandoverHoldsTheTaskUntilParsed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js, names := testbus.Start(t, 1)
	srv, hits := countingSite(t)
	svc := newFetcher(js, names, 2, 5*time.Second)
	got := make(chan jetstream.Msg, 1)
	release := make(chan struct{})
	svc.HandPagesTo(func(_ context.Context, m jetstream.Msg) {
		got <- m
		<-release
		_ = m.Ack()
	}, nil)
	ended := make(chan messages.FetchDone, 1)
	svc.o.Ended = func(fd messages.FetchDone) { ended <- fd }
	go svc.Run(ctx)
	publishTask(t, js, names, "t1", srv.URL+"/")

	var m jetstream.Msg
	select {
	case m = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no page handed over")
	}
	page, err := messages.DecodePage(m.Headers().Get(messages.HeaderPage))
	if err != nil || page.URL != srv.URL+"/" || page.TaskID != "t1" || string(m.Data()) != "<html><body>once</body></html>" {
		t.Fatalf("handed %+v (%v), body %q", page, err, m.Data())
	}
	// The frontier in process hears of the fetch's end before the parse.
	select {
	case fd := <-ended:
		if fd.TaskID != "t1" || fd.Status != 200 || fd.FinishedAt.IsZero() {
			t.Errorf("fetch end heard as %+v", fd)
		}
	default:
		t.Error("the fetch's end not heard before its page was parsed")
	}
	time.Sleep(200 * time.Millisecond) // room for a done report sent too early
	if n := streamLast(t, js, names.StreamFrontier()); n != 0 {
		t.Errorf("%d done reports before the page was parsed, want none", n)
	}
	if info := fetchConsumer(t, js, names); info.NumAckPending != 1 {
		t.Errorf("task ack pending %d while its page is parsed, want 1", info.NumAckPending)
	}
	close(release)
	testutil.Eventually(t, 10*time.Second, "the task acked", func() bool {
		info := fetchConsumer(t, js, names)
		return info.NumAckPending == 0 && info.AckFloor.Consumer == 1
	})
	if n := streamLast(t, js, names.StreamFrontier()); n != 1 {
		t.Errorf("%d done reports, want 1", n)
	}
	if n := streamLast(t, js, names.StreamPages()); n != 0 {
		t.Errorf("%d messages in the pages stream, want none", n)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("URL fetched %d times, want 1", n)
	}
}

// A page the parser hands back (it could not publish what it found) comes
// back with its task and is handed over again, not fetched again: the host
// sees one request and the frontier one done report.
func TestHandedBackPageIsHandedAgainNotRefetched(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js, names := testbus.Start(t, 1)
	srv, hits := countingSite(t)
	svc := newFetcher(js, names, 2, 5*time.Second)
	var handed atomic.Int32
	svc.HandPagesTo(func(_ context.Context, m jetstream.Msg) {
		if handed.Add(1) == 1 {
			_ = m.NakWithDelay(10 * time.Millisecond)
			return
		}
		_ = m.Ack()
	}, nil)
	go svc.Run(ctx)
	publishTask(t, js, names, "t1", srv.URL+"/")
	testutil.Eventually(t, 30*time.Second, "the page handed over twice and its task acked", func() bool {
		info := fetchConsumer(t, js, names)
		return handed.Load() == 2 && info.NumAckPending == 0 && info.AckFloor.Consumer >= 1
	})
	if n := hits.Load(); n != 1 {
		t.Errorf("URL fetched %d times, want 1", n)
	}
	if n := streamLast(t, js, names.StreamFrontier()); n != 1 {
		t.Errorf("%d done reports, want 1", n)
	}
}

// While pages.fetched has another reader (alone says false), pages are
// published there, not handed over; once it has none, they are handed over.
func TestPagesArePublishedWhileAnotherReaderIsThere(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js, names := testbus.Start(t, 1)
	srv, _ := countingSite(t)
	svc := newFetcher(js, names, 2, 5*time.Second)
	var alone atomic.Bool
	var handed atomic.Int32
	svc.HandPagesTo(func(_ context.Context, m jetstream.Msg) {
		handed.Add(1)
		_ = m.Ack()
	}, alone.Load)
	go svc.Run(ctx)
	publishTask(t, js, names, "t1", srv.URL+"/a")
	testutil.Eventually(t, 30*time.Second, "the first page published", func() bool {
		return streamLast(t, js, names.StreamPages()) == 1
	})
	if n := handed.Load(); n != 0 {
		t.Errorf("%d pages handed over while another reader was there, want 0", n)
	}
	alone.Store(true)
	publishTask(t, js, names, "t2", srv.URL+"/b")
	testutil.Eventually(t, 30*time.Second, "the second page handed over", func() bool { return handed.Load() == 1 })
	testutil.Eventually(t, 10*time.Second, "both done reports", func() bool {
		return streamLast(t, js, names.StreamFrontier()) == 2
	})
	if n := streamLast(t, js, names.StreamPages()); n != 1 {
		t.Errorf("%d pages in the pages stream, want the first only", n)
	}
}

// countingSite serves one small HTML page and counts its requests.
func countingSite(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>once</body></html>")
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

func streamLast(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

func fetchConsumer(t *testing.T, js jetstream.JetStream, names subjects.Names) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(context.Background(), names.StreamFetch(), names.ConsumerFetcher())
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// The frontier in process hears of a fetch's end and runs at once, before
// the page is parsed on the fetching goroutine: with the other cores busy
// the partition's loop, woken by Ended, would otherwise wait out the parse
// (a quarter of a millisecond a page on two loaded cores) before handing
// the host its next task. One P makes "the other cores busy" certain.
// The yield is a hint, not a promise (the scheduler takes from its global
// queue first once in 61 rounds, and a loaded machine preempts), so the
// test counts over several pages: without the yield none is heard first.
func TestEndedRunsBeforeThePageIsHandedOn(t *testing.T) {
	const pages, wantHeardFirst = 12, 9
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js, names := testbus.Start(t, 1)
	srv, _ := countingSite(t)
	svc := newFetcher(js, names, 1, 5*time.Second)
	ends := make(chan messages.FetchDone, 1)
	var heard atomic.Int32 // ends the partition's loop has run for
	listening := make(chan struct{})
	go func() { // the partition's loop, parked until an end comes
		close(listening)
		for range ends {
			heard.Add(1)
		}
	}()
	<-listening
	svc.o.Ended = func(fd messages.FetchDone) { ends <- fd }
	heardAtParse := make(chan int32, 1)
	svc.HandPagesTo(func(_ context.Context, m jetstream.Msg) {
		heardAtParse <- heard.Load()
		_ = m.Ack()
	}, nil)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	go svc.Run(ctx)
	heardFirst := 0
	for i := range pages {
		publishTask(t, js, names, fmt.Sprintf("t%d", i), fmt.Sprintf("%s/%d", srv.URL, i))
		select {
		case n := <-heardAtParse:
			if n == int32(i+1) { // this page's end, not only the last one's
				heardFirst++
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("page %d not handed over", i)
		}
	}
	if heardFirst < wantHeardFirst {
		t.Errorf("the goroutine that heard of the fetch's end ran before the parse for %d of %d pages, want at least %d",
			heardFirst, pages, wantHeardFirst)
	}
	cancel()
	close(ends)
}
