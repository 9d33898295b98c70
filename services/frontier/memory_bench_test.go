package frontier

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/testredis"
	"github.com/trawlerhq/trawler/internal/testutil"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

// BenchmarkFrontierMemory measures the resident memory of a frontier
// process (the real `trawler frontier` binary, a child process) that owns
// URLS queued URLs over HOSTS hosts in the machine's Redis: it loads every
// host, issues one task per host and keeps them in flight. The goal
// is under 200 MB for 10 million URLs over 100,000 hosts:
//
//	TRAWLER_BENCH_URLS=10000000 TRAWLER_BENCH_HOSTS=100000 \
//	  go test ./services/frontier -run '^$' -bench FrontierMemory -benchtime 1x -timeout 30m
//
// The default is 1,000,000 URLs over 10,000 hosts (a minute's work).
func BenchmarkFrontierMemory(b *testing.B) {
	addr := testredis.Addr(b)
	urls, hosts := envInt("TRAWLER_BENCH_URLS", 1_000_000), envInt("TRAWLER_BENCH_HOSTS", 10_000)
	const parts = 32
	bin := filepath.Join(b.TempDir(), "trawler")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/trawlerhq/trawler/cmd/trawler").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	ns, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: b.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		b.Fatal(err)
	}
	defer ns.Shutdown()
	prefix := fmt.Sprintf("fmem%08x", rand.Uint32())
	defer testredis.Drop(addr, prefix)
	ctx := context.Background()
	st, err := store.OpenRedis(ctx, []string{addr}, false, prefix)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	preloadParallel(b, st, parts, hosts, urls/hosts)
	st.Close()
	b.Logf("queued %d URLs over %d hosts in Redis in %v", urls/hosts*hosts, hosts, time.Since(start).Round(time.Second))

	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "frontier", "--nats", ns.ClientURL(), "--redis", addr, "--prefix", prefix,
			"--partition-count", strconv.Itoa(parts), "--politeness-delay", "0", "--politeness-factor", "0")
		cmd.Stderr = os.Stderr
		if testing.Verbose() == false {
			cmd.Stderr = nil
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		issued := waitTasks(b, ns.ClientURL(), prefix, hosts, 10*time.Minute)
		loaded := time.Since(start)
		time.Sleep(3 * time.Second) // steady state: every host in flight
		hwm, rss := procMemory(b, cmd.Process.Pid)
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MB")
		b.ReportMetric(float64(rss)/(1<<20), "RSS-MB")
		b.ReportMetric(float64(hwm)/float64(urls), "peak-bytes/queued-URL")
		b.ReportMetric(0, "ns/op")
		b.Logf("frontier: %d tasks issued (one per host) %v after start; peak RSS %.1f MB, RSS %.1f MB",
			issued, loaded.Round(time.Millisecond), float64(hwm)/(1<<20), float64(rss)/(1<<20))
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// preloadParallel is preload with one writer per partition.
func preloadParallel(b *testing.B, st store.Store, parts, hosts, perHost int) {
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			preloadPartition(b, st, p, parts, hosts, perHost)
		}()
	}
	wg.Wait()
}

// waitTasks waits until the fetch stream holds n tasks and returns how many.
func waitTasks(b *testing.B, url, prefix string, n int, timeout time.Duration) uint64 {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	names, err := subjects.New(prefix)
	if err != nil {
		b.Fatal(err)
	}
	stream := names.StreamFetch()
	var msgs uint64
	testutil.CheckFor(b, timeout, 200*time.Millisecond, func() error {
		s, err := js.Stream(context.Background(), stream)
		if err != nil {
			return err
		}
		_, tasks, err := bus.WorkMsgs(context.Background(), s, names.Keeper(stream))
		if err != nil {
			return err
		}
		if msgs = tasks; msgs < uint64(n) {
			return fmt.Errorf("%d tasks issued, want %d", msgs, n)
		}
		return nil
	})
	return msgs
}

// procMemory reads VmHWM and VmRSS (bytes) of a process.
func procMemory(b *testing.B, pid int) (hwm, rss int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fs := strings.Fields(v)
		if len(fs) < 1 {
			continue
		}
		kb, _ := strconv.ParseInt(fs[0], 10, 64)
		switch k {
		case "VmHWM":
			hwm = kb << 10
		case "VmRSS":
			rss = kb << 10
		}
	}
	return hwm, rss
}
