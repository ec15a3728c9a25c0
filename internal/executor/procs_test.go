package executor

import (
	"runtime"
	"testing"
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
