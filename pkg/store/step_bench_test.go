package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/pkg/messages"
)

// BenchmarkStep measures the frontier's steady state on one partition in the
// store alone: every step frees the host of each task in flight (a done) and
// issues its next URL, as BenchmarkDispatch's partitions do with 2,000 hosts
// over 8 partitions (250 each). ns/op is one step; tasks/s counts tasks issued;
// redis-cpu-us/task is the Redis server's CPU (INFO cpu, server-wide: only
// meaningful on a Redis nobody else uses, e.g. REDIS_ADDR of a private one).
//
//	go test -run '^$' -bench Step -benchtime 200x ./pkg/store/
func BenchmarkStep(b *testing.B) {
	for _, hosts := range []int{250, 2500} {
		b.Run(fmt.Sprintf("redis/hosts=%d", hosts), func(b *testing.B) {
			benchStep(b, redisBackend([]string{redisAddr(b)})(b)(), hosts)
		})
		b.Run(fmt.Sprintf("bolt/hosts=%d", hosts), func(b *testing.B) {
			benchStep(b, boltBackend(b)(), hosts)
		})
	}
}

func benchStep(b *testing.B, s Store, hosts int) {
	ctx := context.Background()
	const p = 0
	seq := uint64(0)
	names := make([]string, hosts)
	for h := range names {
		names[h] = fmt.Sprintf("host%06d.example", h)
	}
	var batch []Queued
	for i := range b.N + 1 {
		for _, h := range names {
			batch = append(batch, Queued{Host: h, Link: messages.Link{URL: fmt.Sprintf("http://%s/section/%d/page-%d.html", h, i%17, i), Depth: 1 + i/50}})
			if len(batch) == 1000 {
				seq++
				if _, err := s.Apply(ctx, p, seq, batch, nil); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	seq++
	if _, err := s.Apply(ctx, p, seq, batch, nil); err != nil {
		b.Fatal(err)
	}
	n := 0
	issues := func() []Issue {
		now := time.Now()
		out := make([]Issue, hosts)
		for i, h := range names {
			n++
			out[i] = Issue{Host: h, TaskID: "t" + strconv.Itoa(n), IssuedAt: now, Deadline: now.Add(10 * time.Minute), LeaseUntil: now.Add(11 * time.Minute)}
		}
		return out
	}
	inFlight, err := s.Pop(ctx, p, issues())
	if err != nil || len(inFlight) != hosts {
		b.Fatalf("first pop: %d tasks, %v", len(inFlight), err)
	}
	cpu0 := redisCPU(s)
	stream := uint64(0)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		req := StepRequest{Seq: seq + 1, Issue: issues()}
		now := time.Now()
		for _, in := range inFlight {
			stream++
			req.Done = append(req.Done, Done{Host: in.Task.Host, TaskID: in.Task.ID, NotBefore: now})
			req.Applied = append(req.Applied, stream)
		}
		seq++
		res, err := Step(ctx, s, p, req)
		if err != nil || !res.Applied || len(res.Tasks) != hosts {
			b.Fatalf("step: applied %v, %d tasks, %v", res.Applied, len(res.Tasks), err)
		}
		inFlight = res.Tasks
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N*hosts)/elapsed.Seconds(), "tasks/s")
	if cpu0 >= 0 {
		b.ReportMetric((redisCPU(s)-cpu0)*1e6/float64(b.N*hosts), "redis-cpu-us/task")
	}
}

// redisCPU is the Redis server's CPU seconds so far (user + sys), -1 for
// other stores.
func redisCPU(s Store) float64 {
	r, ok := s.(*Redis)
	if !ok {
		return -1
	}
	c, ok := r.c.(*redis.Client)
	if !ok {
		return -1
	}
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		return -1
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}
