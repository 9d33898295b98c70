// Command natscost measures what one JetStream message costs the NATS server
// in CPU, by message size and storage: it publishes n messages to a stream
// with interest retention and one consumer that acks each (the way
// pages.fetched carries a page from fetcher to parser), and reads the
// server's CPU time from /proc before and after. It answers where the
// services' NATS CPU goes (docs/benchmarks.md, "What a message costs the NATS
// server"): a figure per message, per kilobyte, and file against memory.
//
//	go run ./cmd/natscost -nats nats://127.0.0.1:4222 -sizes 500,5000,16384 -n 40000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	url := flag.String("nats", nats.DefaultURL, "NATS server with JetStream (one this machine runs: its CPU is read from /proc)")
	pid := flag.Int("pid", 0, "the server's process ID (0: the only process named nats-server)")
	sizes := flag.String("sizes", "500,5000,16384", "message sizes in bytes, comma-separated")
	n := flag.Int("n", 40000, "messages per size and storage")
	flag.Parse()
	if *pid == 0 {
		p, err := onlyProcess("nats-server")
		if err != nil {
			log.Fatalf("natscost: %v; pass -pid", err)
		}
		*pid = p
	}
	nc, err := nats.Connect(*url)
	if err != nil {
		log.Fatalf("natscost: %v (start NATS with -js, or point -nats at one)", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("| storage | message bytes | messages | wall | server CPU | per message | per KB |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		for _, f := range strings.Split(*sizes, ",") {
			size, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || size < 1 {
				log.Fatalf("natscost: bad size %q in -sizes", f)
			}
			wall, cpu, err := measure(js, *pid, storage, size, *n)
			if err != nil {
				log.Fatalf("natscost: %v", err)
			}
			per := cpu / time.Duration(*n)
			fmt.Printf("| %v | %d | %d | %v | %.2f s | %.1f µs | %.1f µs |\n", storage, size, *n, wall.Round(time.Millisecond),
				cpu.Seconds(), float64(per.Nanoseconds())/1e3, float64(per.Nanoseconds())/1e3/(float64(size)/1024))
		}
	}
}

// measure sends n messages of size bytes through a fresh stream and its
// consumer and returns the wall time and the server's CPU time it took.
func measure(js jetstream.JetStream, pid int, storage jetstream.StorageType, size, n int) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	name := fmt.Sprintf("NATSCOST_%d_%d", storage, size)
	subject := "natscost." + name
	_ = js.DeleteStream(ctx, name)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Retention: jetstream.InterestPolicy, Storage: storage})
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = js.DeleteStream(context.Background(), name) }()
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "reader", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return 0, 0, err
	}
	got := make(chan struct{}, n)
	cc, err := cons.Consume(func(m jetstream.Msg) { _ = m.Ack(); got <- struct{}{} })
	if err != nil {
		return 0, 0, err
	}
	defer cc.Stop()
	data := make([]byte, size)
	cpu0, err := processCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for i := range n {
		if _, err := js.PublishAsync(subject, data); err != nil {
			return 0, 0, err
		}
		if i%256 == 255 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	for range n {
		select {
		case <-got:
		case <-ctx.Done():
			return 0, 0, errors.New("messages not all delivered within 5 minutes")
		}
	}
	wall := time.Since(start)
	time.Sleep(300 * time.Millisecond) // the last acks reach the server
	cpu1, err := processCPU(pid)
	return wall, cpu1 - cpu0, err
}

// processCPU is a process's user and system CPU time from /proc.
func processCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+sys) * time.Second / 100, nil // USER_HZ
}

// onlyProcess is the PID of the one process whose command name is comm.
func onlyProcess(comm string) (int, error) {
	ents, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == comm {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%d processes named %s", len(found), comm)
	}
	return found[0], nil
}
