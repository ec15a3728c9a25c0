package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
)

// A second writer tampers with a vote or tpcb-like run's rows, the table
// gaining rows (vote: one deleted, twelve forged; tpcb-like: one
// transaction deleted and undone, one forged and a row of delta 0), then
// holds the table the run writes locked across the run's end, with 32
// and 24 clients waiting on it. The drain cancels them and reads their
// answers: none committed, so none is in doubt, and the rows gained are a
// violation. On the code before, every one of them was in doubt, more
// subsets than the audit tries (vote) or more in doubt than it tries
// (tpcb-like): "not checked", exit 0 (the sixth retest's (2)). Without
// the tampering, the same lock leaves 0 abandoned and the run passes.
func TestLockAcrossEndNoDoubt(t *testing.T) {
	t.Parallel()
	const forgeVotes = `DELETE FROM vote WHERE ctid = (SELECT min(ctid) FROM vote);
		INSERT INTO vote SELECT 7, 1000 + g FROM generate_series(1, 12) g`
	// In tpcb-like's order: accounts, tellers, branches.
	const forgeTxn = `CREATE TEMP TABLE gone ON COMMIT DROP AS SELECT * FROM pgbench_history WHERE ctid = (SELECT max(ctid) FROM pgbench_history);
		DELETE FROM pgbench_history WHERE ctid = (SELECT max(ctid) FROM pgbench_history);
		UPDATE pgbench_accounts a SET abalance = a.abalance - g.delta FROM gone g WHERE a.aid = g.aid;
		UPDATE pgbench_accounts SET abalance = abalance - 4000 WHERE aid = 17;
		UPDATE pgbench_tellers t SET tbalance = t.tbalance - g.delta FROM gone g WHERE t.tid = g.tid;
		UPDATE pgbench_tellers SET tbalance = tbalance - 4000 WHERE tid = 3;
		UPDATE pgbench_branches b SET bbalance = b.bbalance - g.delta FROM gone g WHERE b.bid = g.bid;
		UPDATE pgbench_branches SET bbalance = bbalance - 4000 WHERE bid = 1;
		INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 17, -4000, now()), (3, 1, 17, 0, now())`
	for _, tc := range []struct {
		name, count, tamper, lock string
		db                        func(*testing.T) string
		args                      []string
	}{
		{"vote", "SELECT count(*) FROM vote", forgeVotes, "LOCK TABLE vote IN ACCESS EXCLUSIVE MODE",
			func(t *testing.T) string {
				url := srv.NewDatabase(t)
				if r := txload(t.Context(), nil, "init", "vote", "--url", url, "--articles", "2000"); r.code != 0 {
					t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
				}
				return url
			},
			[]string{"vote", "--variant", "join", "--articles", "2000", "--write-every", "1", "--concurrency", "32", "--init", "keep"}},
		{"tpcb-like", "SELECT count(*) FROM pgbench_history", forgeTxn, "LOCK TABLE pgbench_accounts IN ACCESS EXCLUSIVE MODE",
			tpcbDatabase, []string{"tpcb-like", "--concurrency", "24"}},
	} {
		for _, tamper := range []bool{true, false} {
			name := tc.name
			if !tamper {
				name += "/clean"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				url := tc.db(t)
				conn := pgtest.Conn(t, url)
				ctx := t.Context()
				done := make(chan error, 1)
				go func() {
					for ; ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
						var n int64
						if err := conn.QueryRow(ctx, tc.count).Scan(&n); err != nil || n < 10 {
							continue
						}
						if tamper {
							// Tried again on a deadlock with the run.
							if _, err := conn.Exec(ctx, "BEGIN; "+tc.tamper+"; COMMIT"); err != nil {
								_, _ = conn.Exec(ctx, "ROLLBACK")
								continue
							}
						}
						// Held past the run's end (3 s) and its drain
						// (--drain-timeout 500ms), then let go.
						_, err := conn.Exec(ctx, "BEGIN; "+tc.lock+"; SELECT pg_sleep(6); COMMIT")
						done <- err
						return
					}
					done <- ctx.Err()
				}()
				r := txload(ctx, nil, append(append([]string{"run"}, tc.args...), "--url", url, "--progress", "0",
					"--duration", "3s", "--drain-timeout", "500ms")...)
				if err := <-done; err != nil {
					t.Fatalf("the second writer did not lock (and tamper) during the run: %v\n%s", err, r.stdout)
				}
				out := squeeze(r.stdout)
				t.Log(out[strings.Index(out, "drain:"):])
				if !regexp.MustCompile(`drain: \d+ operations? in flight when the window ended, not in the figures below: \d+ committed and [1-9]\d* failed in the [^,]+, 0 abandoned`).MatchString(out) {
					t.Errorf("the operations waiting on the lock at the drain deadline were not all failed, none abandoned:\n%s", r.stdout)
				}
				if !tamper {
					if r.code != 0 || strings.Contains(out, "not checked") {
						t.Fatalf("clean run behind a lock: exit %d, want 0 and the identity checked\n%s\n%s", r.code, r.stdout, r.stderr)
					}
					return
				}
				if r.code != 1 || !strings.Contains(out, "VIOLATION") {
					t.Fatalf("run beside a second writer that added rows: exit %d, want 1 and a VIOLATION\n%s\n%s", r.code, r.stdout, r.stderr)
				}
			})
		}
	}
}
