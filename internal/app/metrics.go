package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyCheck is one condition a process must meet before /readyz answers
// 200. Check returns nil when the condition holds; its error is shown in the
// /readyz body. Checks run on every probe, so they must be cheap and honour
// ctx (a probe gives them readyTimeout).
//
// The process's own checks (NATS connected, store reachable) are always
// there; callers add theirs to ServeMetrics, e.g. partition ownership: a
// dedup or frontier replica is ready only once it owns its partitions.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// readyTimeout bounds one /readyz probe; kubelet's default probe timeout is 1s.
const readyTimeout = 800 * time.Millisecond

// ReadyChecks are the conditions every process of d has: connected to NATS
// and, when it has a store, the store answering for the partitions it owns.
func (d *Deps) ReadyChecks() []ReadyCheck {
	checks := []ReadyCheck{{Name: "nats", Check: func(context.Context) error {
		if !d.NC.IsConnected() {
			return fmt.Errorf("not connected (status %s)", d.NC.Status())
		}
		return nil
	}}}
	if d.Store != nil && d.automaticOwnership() {
		// Ready once the replica owns its share of the partitions, and the
		// store answers for them.
		checks = append(checks, ReadyCheck{Name: "partitions", Check: func(ctx context.Context) error {
			m := d.member.Load()
			if m == nil || !m.Ready() {
				return errors.New("not yet owning the partitions assigned to this replica")
			}
			_, err := d.Store.Stats(ctx, m.Owned())
			return err
		}})
	} else if d.Store != nil {
		owned, err := d.Config.OwnedPartitions()
		checks = append(checks, ReadyCheck{Name: "store", Check: func(ctx context.Context) error {
			if err != nil {
				return err
			}
			// One pipelined read of each owned partition's counters: it
			// touches every Redis shard that holds one of them.
			_, err := d.Store.Stats(ctx, owned)
			return err
		}})
	}
	return checks
}

// MetricsHandler serves
//   - /metrics: Prometheus metrics of d.Registry;
//   - /healthz: 200 while the process serves HTTP at all (liveness: a NATS or
//     Redis outage must not restart pods that are waiting to reconnect);
//   - /readyz: 200 when d.ReadyChecks and extra all pass, else 503 with one
//     line per failed check.
func MetricsHandler(d *Deps, extra ...ReadyCheck) http.Handler {
	checks := append(d.ReadyChecks(), extra...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		var failed []string
		for _, c := range checks {
			if err := c.Check(ctx); err != nil {
				failed = append(failed, c.Name+": "+err.Error())
			}
		}
		if len(failed) > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, f := range failed {
				fmt.Fprintln(w, f)
			}
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// ServeMetrics serves MetricsHandler on addr until ctx ends. It also adds the
// Go runtime and process collectors (memory, CPU, open files) to d.Registry.
func ServeMetrics(ctx context.Context, addr string, d *Deps, log *slog.Logger, extra ...ReadyCheck) {
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		var dup prometheus.AlreadyRegisteredError
		if err := d.Registry.Register(c); err != nil && !errors.As(err, &dup) {
			log.Warn("metrics collector", "err", err)
		}
	}
	srv := &http.Server{Addr: addr, Handler: MetricsHandler(d, extra...), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "addr", addr, "err", err)
		}
	}()
	go func() { <-ctx.Done(); srv.Close() }()
}
