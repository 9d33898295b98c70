package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
)

// trawler run makes the parser's and the fetcher's buckets with its
// streams, as those services would make them (their own settings: the
// fetcher's TTL is --robots-ttl), and no robots bucket with --ignore-robots.
func TestEmbeddedMakesTheServicesBucketsAtItsStart(t *testing.T) {
	ctx := context.Background()
	for _, ignore := range []bool{false, true} {
		cfg := testConfig(t, nil)
		cfg.IgnoreRobots = ignore
		cfg.RobotsTTL = 90 * time.Minute
		d, err := app.OpenEmbedded(ctx, cfg, "", testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.JS.KeyValue(ctx, d.Names.ScopeBucket()); err != nil {
			t.Errorf("ignore robots %v: scope bucket: %v", ignore, err)
		}
		kv, err := d.JS.KeyValue(ctx, d.Names.RobotsBucket())
		switch {
		case ignore && !errors.Is(err, jetstream.ErrBucketNotFound):
			t.Errorf("--ignore-robots: robots bucket made (err %v)", err)
		case !ignore && err != nil:
			t.Errorf("robots bucket: %v", err)
		case !ignore:
			st, err := kv.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.TTL() != cfg.RobotsTTL {
				t.Errorf("robots bucket: TTL %v, want --robots-ttl %v", st.TTL(), cfg.RobotsTTL)
			}
		}
		d.Close()
	}
}
