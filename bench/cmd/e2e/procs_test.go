package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/bench/websim"
)

func TestProcReadings(t *testing.T) {
	child := exec.Command("sleep", "5")
	if err := child.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	deadline := time.Now().Add(2 * time.Second)
	for childrenRSS() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if childrenRSS() == 0 {
		t.Error("childrenRSS does not see a running child")
	}
	// This test binary's own CPU, found by its command name.
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	name := filepath.Base(os.Args[0])
	if len(name) > 15 {
		name = name[:15] // the kernel keeps 15 characters of it
	}
	if serverCPU(name) <= 0 {
		t.Errorf("serverCPU(%q) found no CPU time", name)
	}
}

func TestRSSAtProgress(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var reqs []websim.Request
	for i := range 8 { // page requests at 0, 250, ..., 1750 ms
		reqs = append(reqs, websim.Request{Path: "/p/" + strconv.Itoa(i), Start: at(250 * i)})
	}
	reqs = append(reqs, websim.Request{Path: "/robots.txt", Start: at(3000)})
	rss := []float64{10, 20, 30, 40, 0} // read at 0.5, 1, 1.5, 2 s; the last after exit
	got := rssAtProgress([][]websim.Request{reqs}, t0, rss, 500*time.Millisecond)
	// 25 %: the 2nd request (250 ms), 50 %: the 4th (750 ms), 100 %: the 8th (1750 ms).
	if got != [3]float64{10, 20, 40} {
		t.Fatalf("rssAtProgress = %v", got)
	}
}

// A service that dies during a crawl fails the wait at once, with its exit
// and the end of its log, instead of a timeout that says nothing of why.
func TestWaitBesideNamesAServiceThatExited(t *testing.T) {
	dir := t.TempDir()
	status, err := start(dir, "status", "sleep", "30")
	if err != nil {
		t.Skip("no sleep command:", err)
	}
	defer status.stop()
	alive, err := start(dir, "frontier", "sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	defer alive.stop()
	dead, err := start(dir, "dedup", "sh", "-c", "echo first; echo 'cannot reach Redis at 127.0.0.1:6379'; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err = status.waitBeside([]*proc{alive, dead}, 20*time.Second, io.Discard)
	if err == nil || time.Since(t0) > 10*time.Second {
		t.Fatalf("waitBeside = %v after %s, want an error at once", err, time.Since(t0))
	}
	for _, want := range []string{"dedup exited (exit status 3)", "cannot reach Redis at 127.0.0.1:6379"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "frontier") {
		t.Errorf("error %q names a service that still runs", err)
	}
}

// A status --wait that says the crawl stopped moving is heard while the run
// waits, each line once, not only at the timeout.
func TestWaitBesidePassesOnStallLines(t *testing.T) {
	dir := t.TempDir()
	status, err := start(dir, "status", "sh", "-c", `echo "12:00:00 fetched 5"
echo "trawler status: the crawl has not moved for 30s; it waits for: 1 tasks in the fetch stream"
sleep 1.5; exit 0`)
	if err != nil {
		t.Skip("no sh:", err)
	}
	defer status.stop()
	var said bytes.Buffer // written by waitBeside on this goroutine
	if err := status.waitBeside(nil, 20*time.Second, &said); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(said.String(), "has not moved"); got != 1 {
		t.Errorf("passed on %d stall lines, want 1:\n%s", got, said.String())
	}
	if !strings.Contains(said.String(), "e2e: status: trawler status: the crawl has not moved for 30s; it waits for: 1 tasks in the fetch stream") {
		t.Errorf("said %q", said.String())
	}
}
