//go:build unix

package pgtest

import (
	"syscall"
	"testing"
	"time"
)

// Usage is what the process has spent: CPU time (user and system) and
// context switches (voluntary and not).
type Usage struct {
	CPU      time.Duration
	Switches int64
}

// ReadUsage is what the test process has spent so far.
func ReadUsage(tb testing.TB) Usage {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), Switches: ru.Nvcsw + ru.Nivcsw}
}

// ReportUsage reports the client's CPU time and context switches per
// operation since from (ReadUsage), ops operations: the figures that the
// client-bound comparison with the floor (../shared/perfkit) turns on,
// which the machine's load changes less than it changes times. The server
// is another process: its CPU is not counted.
func ReportUsage(b *testing.B, from Usage, ops int) {
	b.Helper()
	if ops <= 0 {
		return
	}
	to := ReadUsage(b)
	b.ReportMetric(float64((to.CPU-from.CPU).Nanoseconds())/float64(ops), "cpu-ns/op")
	b.ReportMetric(float64(to.Switches-from.Switches)/float64(ops), "switches/op")
}
