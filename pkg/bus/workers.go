package bus

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Work runs n workers that hand each message of msgs to handle until the
// channel closes (Pull closes it when ctx ends). handle gets a context that
// outlives ctx, so the message in hand is finished and acked, not abandoned.
func Work(ctx context.Context, n int, msgs <-chan jetstream.Msg, handle func(context.Context, jetstream.Msg)) {
	work := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range msgs {
				handle(work, m)
			}
		}()
	}
	wg.Wait()
}

// Counter is a service's running total exported as a Prometheus counter.
type Counter struct {
	Name, Help string
	Value      *atomic.Int64
}

// RegisterCounters exports counters as trawler_<subsystem>_<name> on reg
// (nothing when reg is nil).
func RegisterCounters(reg prometheus.Registerer, subsystem string, counters ...Counter) {
	if reg == nil {
		return
	}
	for _, c := range counters {
		v := c.Value
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Subsystem: subsystem, Name: c.Name, Help: c.Help},
			func() float64 { return float64(v.Load()) }))
	}
}
