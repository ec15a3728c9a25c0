//go:build linux

package failoverrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txload/txload/internal/pg/replica"
)

// The --failover-command ends with its children when its timeout runs out
// or txload is interrupted: its shell and every process it started (a
// sleep here; pg_autoctl perform failover in the issue) are gone when Run
// returns. Before, only the shell was killed: the command ran on (ppid 1)
// and could finish the failover after txload had exited.
func TestFailoverCommandEndsWithItsChildren(t *testing.T) {
	p := startPair(t, replica.Async)
	for i, tc := range []struct {
		name      string
		timeout   time.Duration
		interrupt bool // cancel Run's context while the command runs
	}{
		{"timeout", time.Second, false},
		{"interrupt", time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("47.%d%d", os.Getpid(), i)
			o, out := clusterOptions(t, p.URL())
			o.Run.Engine.Duration, o.At = 6*time.Second, time.Second
			o.FailoverCommand, o.FailoverTimeout = "sleep "+marker+"; true", tc.timeout
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var interrupted atomic.Bool
			if tc.interrupt {
				// The interrupt comes while the command runs.
				go func() {
					for ctx.Err() == nil && len(procsWith(marker)) == 0 {
						time.Sleep(10 * time.Millisecond)
					}
					interrupted.Store(ctx.Err() == nil)
					cancel()
				}()
			}
			_, err := Run(ctx, o)
			if tc.interrupt && !interrupted.Load() {
				t.Fatalf("the command never ran: %v\n%s", err, out)
			}
			t.Logf("%v\n%s", err, out)
			if left := procsWith(marker); len(left) > 0 {
				t.Fatalf("the failover command runs on after txload's run: %v", left)
			}
		})
	}
}

// procsWith lists the processes whose command line has marker.
func procsWith(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmdline, marker) && !strings.Contains(cmdline, "-test.") {
			out = append(out, e.Name()+": "+cmdline)
		}
	}
	return out
}
