package cli

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// A run's audit holds the run to what it changed: after pgbench truncated
// the history (txload's pgbench as pgbench's own does before each run
// unless -n), a tpcb-like or simple-update run with --init keep passes its
// audit; the standalone checks say what they can hold of such tables.
func TestBuiltinAuditAfterTruncation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		pgbench func(t *testing.T, url string)
	}{
		{"txload pgbench", func(t *testing.T, url string) {
			if r := txload(t.Context(), nil, "pgbench", "-T", "2", "-c", "2", url); r.code != 0 {
				t.Fatalf("txload pgbench: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		}},
		{"pgbench", func(t *testing.T, url string) {
			path, _ := pgtest.Pgbench(t)
			cmd := exec.Command(path, "-T", "2", "-c", "2", url)
			cmd.Env = append(os.Environ(), "LANG=C")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("pgbench: %v\n%s", err, out)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := srv.NewDatabase(t)
			run := func(args ...string) result {
				t.Helper()
				r := txload(t.Context(), nil, append(args, "--url", url)...)
				if r.code != 0 {
					t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
				}
				return r
			}
			run("init", "tpcb")
			run("run", "tpcb-like", "--concurrency", "2", "--duration", "1s", "--progress", "0")
			c.pgbench(t, url)
			for _, b := range []string{"tpcb-like", "simple-update", "tpcb-like"} {
				r := run("run", b, "--init", "keep", "--concurrency", "2", "--duration", "1s", "--progress", "0")
				for _, want := range []string{"before the run", "the rows the run's transactions wrote", "check: ok"} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("run %s: no %q\n%s", b, want, r.stdout)
					}
				}
			}
			run("check", "tpcb")
			// The history no longer covers the balances: check tpcb-like
			// says so, and names check tpcb.
			r := txload(t.Context(), nil, "check", "tpcb-like", "--url", url)
			if r.code != 1 || !strings.Contains(r.stdout, "after pgbench truncated the history") {
				t.Errorf("check tpcb-like after a truncation: exit %d\n%s", r.code, r.stdout)
			}
		})
	}
}

// A second writer during a run that swaps one history transaction for a
// coherent one of its own (row count and every sum kept, every balance
// its history's sum) fails the run's audit: it checks which rows the run
// added, not how many.
func TestBuiltinAuditSecondWriter(t *testing.T) {
	t.Parallel()
	// The first history row's delta moves from its account to the next
	// one; its row is replaced by one naming that account (its teller and
	// branch, moved by tpcb-like, are the same).
	const swap = `WITH h AS (DELETE FROM pgbench_history WHERE ctid = (SELECT min(ctid) FROM pgbench_history WHERE delta <> 0) RETURNING *),
		a AS (UPDATE pgbench_accounts SET abalance = abalance + CASE WHEN aid = (SELECT aid FROM h) THEN -(SELECT delta FROM h) ELSE (SELECT delta FROM h) END
			WHERE aid IN ((SELECT aid FROM h), (SELECT aid % 100000 + 1 FROM h)))
		INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT tid, bid, aid % 100000 + 1, delta, mtime FROM h`
	for _, builtin := range []string{"tpcb-like", "simple-update"} {
		t.Run(builtin, func(t *testing.T) {
			t.Parallel()
			url := srv.NewDatabase(t)
			if r := txload(t.Context(), nil, "init", "tpcb", "--url", url); r.code != 0 {
				t.Fatalf("init: %s", r.stderr)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				conn := pgtest.Conn(t, url)
				for ctx.Err() == nil {
					var n int64
					if err := conn.QueryRow(ctx, "SELECT count(*) FROM pgbench_history WHERE delta <> 0").Scan(&n); err != nil {
						done <- err
						return
					}
					if n >= 10 {
						_, err := conn.Exec(ctx, swap)
						done <- err
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				done <- ctx.Err()
			}()
			r := txload(t.Context(), nil, "run", builtin, "--url", url, "--concurrency", "2", "--duration", "3s", "--progress", "0")
			if err := <-done; err != nil {
				t.Fatalf("the second writer: %v", err)
			}
			if r.code != 1 || !strings.Contains(r.stdout, "VIOLATION: the history rows the run added are not the ones its transactions wrote") {
				t.Errorf("run %s beside a second writer: exit %d, want 1 and the identity's VIOLATION\n%s\n%s", builtin, r.code, r.stdout, r.stderr)
			}
			// The sums and the count: all kept.
			if strings.Contains(r.stdout, "balances disagree") || strings.Contains(r.stdout, "fewer than") {
				t.Errorf("the tampering was meant to keep sums and count:\n%s", r.stdout)
			}
		})
	}
}
