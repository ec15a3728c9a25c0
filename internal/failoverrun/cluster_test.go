package failoverrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pg/embedded"
	"github.com/txload/txload/internal/pg/replica"
)

// startPair starts an embedded primary and standby for a test that treats
// them as a cluster of its own (--url).
func startPair(t *testing.T, r replica.Replication) *replica.Pair {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded primary and standby")
	}
	p, err := replica.StartPair(t.Context(), replica.PairOptions{Replication: r,
		Server: embedded.Options{CacheDir: os.Getenv("TXLOAD_CACHE_DIR")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// clusterOptions is `txload failover bank --url URL --init fresh`.
func clusterOptions(t *testing.T, url string) (Options, *buffer) {
	o, out := options(t, "bank")
	o.URL, o.Replications = url, nil
	o.Run.InitSet = true
	return o, out
}

// A cluster's failover by --failover-command (a shell command: the
// primary's postmaster gets SIGQUIT, the standby is promoted with psql),
// and one txload only waits for, made by the test during the run (the
// target in libpq's keyword form): both are seen, the unavailability
// measured, nothing lost (sync), the check clean.
func TestCluster(t *testing.T) {
	for _, mode := range []string{"command", "wait", "late"} {
		t.Run(mode, func(t *testing.T) {
			p := startPair(t, replica.Sync)
			url := p.URL()
			if mode == "wait" {
				url = p.ConnString() // libpq's keyword form: host=a,b port=p,q
			}
			o, out := clusterOptions(t, url)
			pid := filepath.Join(p.Primary.DataDir(), "postmaster.pid")
			switch mode {
			case "command":
				o.FailoverCommand = fmt.Sprintf(`kill -QUIT "$(head -1 %s)" && sleep 0.3 && psql -XAtq %q -c "SELECT pg_promote()"`, pid, p.Standby.URL())
			case "late":
				// The promotion comes after the load's end: the audit
				// waits for it, and the report says so.
				o.Run.Engine.Duration, o.At = 3*time.Second, 2*time.Second
				o.FailoverCommand = fmt.Sprintf(`kill -QUIT "$(head -1 %s)" && sleep 2 && psql -XAtq %q -c "SELECT pg_promote()"`, pid, p.Standby.URL())
			default:
				go func() {
					time.Sleep(3 * time.Second) // the load starts after the init, about 1 s in
					if _, err := p.Fail(context.Background(), replica.Immediate); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(300 * time.Millisecond)
					if _, err := p.Promote(context.Background()); err != nil {
						t.Error(err)
					}
				}()
			}
			r, err := runFailover(t, o)
			t.Logf("\n%s", section(out.String()))
			if err != nil {
				t.Fatal(err)
			}
			if r.FaultSent.IsZero() || r.NewPrimary.IsZero() || r.FirstNew.IsZero() || r.Timeline != 2 {
				t.Fatalf("fault %s, new primary %s (timeline %d), first commit there %s: want all seen", clock(r.FaultSent), clock(r.NewPrimary), r.Timeline, clock(r.FirstNew))
			}
			if r.Unavailable <= 0 || r.Tally.Lost != 0 || r.Tally.Acked < 100 {
				t.Fatalf("unavailable %s, lost %d of %d", r.Unavailable, r.Tally.Lost, r.Tally.Acked)
			}
			if r.Outcome == nil || r.Outcome.Check == nil || len(r.Outcome.Check.Violations) > 0 {
				t.Fatalf("bank's check after the failover: %+v", r.Outcome)
			}
			if late := strings.Contains(out.String(), "after the load's end"); late != (mode == "late") {
				t.Fatalf("mode %s: the report says the new primary came after the load's end: %v", mode, late)
			}
		})
	}
}

// What is found only at run time ends the run with an error (exit 1), in
// one line: a failover command that fails, one that never completes, a
// cluster whose standby does not replicate (found before the load: no
// marker is written), no failover while txload waits for one.
func TestClusterFailures(t *testing.T) {
	p := startPair(t, replica.Async)
	for _, tc := range []struct {
		name    string
		set     func(o *Options)
		want    string
		nothing bool // nothing was run
	}{
		{"command fails", func(o *Options) { o.FailoverCommand = "echo trying; echo no such formation >&2; exit 3" }, "--failover-command failed (exit status 3): no such formation", false},
		{"command hangs", func(o *Options) { o.FailoverCommand, o.FailoverTimeout = "sleep 60", time.Second }, "--failover-command did not complete within --failover-timeout 1s", false},
		{"no failover", func(o *Options) { o.Run.Engine.Duration = 2 * time.Second; o.At = time.Second }, "no failover happened during the load (--duration 2s)", false},
		{"standby down", func(o *Options) {
			if err := p.Standby.Stop(); err != nil {
				t.Fatal(err)
			}
		}, "no standby streams from the primary", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, out := clusterOptions(t, p.URL())
			o.Run.Engine.Duration, o.At = 3*time.Second, time.Second
			tc.set(&o)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			rs, err := Run(ctx, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line with %q\n%s", err, tc.want, out)
			}
			t.Logf("%v", err)
			if tc.nothing && (len(rs) > 0 || strings.Contains(out.String(), "bank on")) {
				t.Fatalf("the load ran:\n%s", out)
			}
		})
	}
}
