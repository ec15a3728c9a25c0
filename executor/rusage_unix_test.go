//go:build unix

package executor

import (
	"syscall"
	"testing"
	"time"
)

// usage is what the process has spent: CPU time (user and system) and
// context switches (voluntary and not).
type usage struct {
	cpu      time.Duration
	switches int64
}

func readUsage(tb testing.TB) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), switches: ru.Nvcsw + ru.Nivcsw}
}

// reportUsage reports the client's CPU time and context switches per
// operation since from: the figures the client-bound comparison with the
// floor (../shared/perfkit) turns on, which the machine's load does not
// change as much as it changes times.
func reportUsage(b *testing.B, from usage, ops int) {
	to := readUsage(b)
	b.ReportMetric(float64((to.cpu-from.cpu).Nanoseconds())/float64(ops), "cpu-ns/op")
	b.ReportMetric(float64(to.switches-from.switches)/float64(ops), "switches/op")
}
