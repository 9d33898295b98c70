package app

import (
	"runtime/debug"
	"testing"
)

func TestTuneGCKeepsAnExplicitGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // what the runtime read from GOGC at start
	if got := TuneGC(); got != 150 {
		t.Fatalf("TuneGC with GOGC=150 = %d", got)
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("GC percent after TuneGC = %d, want GOGC's 150", got)
	}
}

func TestTuneGCDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	if got := TuneGC(); got != DefaultGCPercent {
		t.Fatalf("TuneGC = %d, want %d", got, DefaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Fatalf("GC percent after TuneGC = %d, want %d", got, DefaultGCPercent)
	}
}
