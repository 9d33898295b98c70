package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
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
