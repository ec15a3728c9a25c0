package executor

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// Runs at once in one process count their loops together, so that
// GOMAXPROCS always leaves two Ps beyond every loop, and it returns to what
// it was once the last run ends.
func TestHoldProcs(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	releaseA := holdProcs(base)
	if got := runtime.GOMAXPROCS(0); got < base+2 {
		t.Fatalf("GOMAXPROCS %d with %d loops", got, base)
	}
	releaseB := holdProcs(3)
	if got := runtime.GOMAXPROCS(0); got < base+3+2 {
		t.Fatalf("GOMAXPROCS %d with %d loops", got, base+3)
	}
	// The first run ends: the second's loops still need their Ps.
	releaseA()
	if got := runtime.GOMAXPROCS(0); got < 3+2 {
		t.Fatalf("GOMAXPROCS %d with 3 loops left", got)
	}
	releaseB()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Fatalf("GOMAXPROCS %d after every run, was %d", got, base)
	}
}

// sleep returns at its time, never before, spinning or not, and false as
// soon as ctx ends.
func TestSleep(t *testing.T) {
	for _, spin := range []time.Duration{0, 2 * time.Millisecond, time.Hour} {
		at := time.Now().Add(5 * time.Millisecond)
		if !sleep(t.Context(), at, spin) || time.Now().Before(at) {
			t.Fatalf("spin %s: returned before its time", spin)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, spin := range []time.Duration{0, time.Hour} {
		if sleep(ctx, time.Now().Add(time.Hour), spin) {
			t.Fatalf("spin %s: slept on after its context ended", spin)
		}
	}
}
