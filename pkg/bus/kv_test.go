package bus_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/pkg/bus"
)

// Many processes opening one bucket at once all get it, even when their
// settings differ (services started with different TTLs): the losers of the
// creation race get "stream name already in use" and must try again.
func TestKeyValueConcurrentOpen(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set: the race shows on the machine's NATS server")
	}
	conns := make([]jetstream.JetStream, 16)
	for i := range conns {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns[i], _ = jetstream.New(nc)
	}
	js := conns[0]
	bucket := fmt.Sprintf("RACE%08X", rand.Uint32())
	defer js.DeleteKeyValue(context.Background(), bucket)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := bus.KeyValue(context.Background(), conns[i], jetstream.KeyValueConfig{Bucket: bucket, Storage: jetstream.FileStorage, TTL: time.Duration(1+i%2) * time.Minute})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
