package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
)

// bankModes are a bank run in each transfer mode, at the levels the
// fourth retest fooled (serializable read-modify-write, read-committed
// delta) and another.
var bankModes = []struct{ name, level, mode string }{
	{"read-modify-write at serializable", "ser", "read-modify-write"},
	{"delta at read committed", "rc", "delta"},
	{"for-update at repeatable read", "rr", "for-update"},
}

// newBank is a new database with a bank of 1000 accounts.
func newBank(t *testing.T) string {
	t.Helper()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "1000"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	return url
}

// runRows counts the ledger rows of the run under way (its range is the
// one bank_run holds open).
const runRows = `SELECT count(*) FROM bank_ledger WHERE id > (SELECT COALESCE(max(first_id), 0) FROM bank_run WHERE last_id IS NULL)
	AND EXISTS (SELECT 1 FROM bank_run WHERE last_id IS NULL)`

// swapTransfer deletes the run's last transfer that is the latest write
// of both its accounts, undoes its balances and versions, and inserts a
// forged transfer in its place (the same accounts the other way, the
// same versions read and written): the row count, every balance's replay
// and every version chain stay whole. It returns the rows it deleted,
// inserted and updated.
const swapTransfer = `WITH t AS (SELECT l.id, l.from_id, l.to_id, l.amount FROM bank_ledger l
		JOIN bank_account f ON f.id = l.from_id AND f.version = l.from_written
		JOIN bank_account d ON d.id = l.to_id AND d.version = l.to_written
		WHERE l.id > (SELECT max(first_id) FROM bank_run) ORDER BY l.id DESC LIMIT 1),
	del AS (DELETE FROM bank_ledger WHERE id = (SELECT id FROM t) RETURNING *),
	ins AS (INSERT INTO bank_ledger (from_id, to_id, amount, from_read, to_read, from_written, to_written, isolation, mode)
		SELECT to_id, from_id, amount, to_read, from_read, to_written, from_written, isolation, mode FROM del RETURNING id),
	upd AS (UPDATE bank_account SET balance = balance + CASE WHEN id = (SELECT from_id FROM t) THEN 2 ELSE -2 END * (SELECT amount FROM t)
		WHERE id IN ((SELECT from_id FROM t), (SELECT to_id FROM t)) RETURNING id)
	SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM ins), (SELECT count(*) FROM upd)`

// A second writer during a bank run swaps one of the run's committed
// transfers for a forged one, keeping the count, the replay and the
// versions: the run's audit holds the rows of its ledger ids to the
// transfers it saw commit, and names the swap; a clean run after it on
// the same tables passes. With "and a lock", the writer then holds the
// accounts locked across the run's end, so that the transfers under way
// are abandoned before they sent their writes (the fifth retest: their
// hashes unknown, the audit counted rows only and passed): none of them
// committed, by the count, so the sum is still checked.
func TestBankAuditSecondWriter(t *testing.T) {
	t.Parallel()
	type mode struct {
		name, level, mode string
		lock              bool
	}
	var modes []mode
	for _, m := range bankModes {
		modes = append(modes, mode{m.name, m.level, m.mode, false})
		if m.mode != "delta" { // one round trip: its hash is known before it is sent
			modes = append(modes, mode{m.name + " and a lock", m.level, m.mode, true})
		}
	}
	for _, tc := range modes {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := newBank(t)
			run := func(args ...string) result {
				return txload(t.Context(), nil, append([]string{"run", "bank", "--url", url, "--accounts", "1000", "--selection", "100",
					"--isolation", tc.level, "--transfer", tc.mode, "--concurrency", "2", "--progress", "0"}, args...)...)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			conn := pgtest.Conn(t, url)
			done := beside(ctx, conn, runRows, 5, func() (bool, error) {
				// At repeatable read: a transfer of the run that writes
				// the same accounts meanwhile fails it (tried again), or
				// waits for it.
				var del, ins, upd int64
				err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
					return tx.QueryRow(ctx, swapTransfer).Scan(&del, &ins, &upd)
				})
				if err != nil || del != 1 || ins != 1 || upd != 2 {
					return true, nil
				}
				if tc.lock {
					// Held past the run's end (3 s) and its drain
					// (--drain-timeout 500ms), then let go for the audit.
					_, err = conn.Exec(ctx, "BEGIN; LOCK TABLE bank_account IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(6); COMMIT")
				}
				return false, err
			})
			args := []string{"--init", "keep", "--duration", "5s"}
			if tc.lock {
				args = []string{"--init", "keep", "--duration", "3s", "--drain-timeout", "500ms"}
			}
			r := run(args...)
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("the second writer did not swap a transfer during the run: %v\n%s", err, r.stdout)
			}
			if r.code != 1 || !strings.Contains(r.stdout, "VIOLATION: ledger rows: the rows of the run's ledger ids") {
				t.Fatalf("run beside a second writer: exit %d, want 1 and the identity's VIOLATION\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Count(r.stdout, "\nVIOLATION") != 1 {
				t.Errorf("the swap was meant to keep the count, the replay and the versions whole:\n%s", r.stdout)
			}
			t.Log(r.stdout[strings.Index(r.stdout, "ambiguous:"):])
			if r := run("--init", "keep", "--duration", "1s"); r.code != 0 ||
				!strings.Contains(squeeze(r.stdout), "ledger identity: the rows of the run's ledger ids are the transfers it saw commit") {
				t.Fatalf("clean run after: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// Connections killed during a bank run leave transfers whose commit was
// in flight: the run's audit explains its ledger ids' rows by the
// transfers that committed and some of those in doubt, and accuses
// nothing, in every mode.
func TestBankAuditConnectionsKilled(t *testing.T) {
	t.Parallel()
	for _, tc := range bankModes {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := newBank(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan result, 1)
			go func() {
				done <- txload(ctx, nil, "run", "bank", "--url", url, "--init", "keep", "--accounts", "1000", "--selection", "100",
					"--isolation", tc.level, "--transfer", tc.mode, "--concurrency", "4", "--duration", "3s", "--progress", "0")
			}()
			conn := pgtest.Conn(t, url)
			var r result
			tick := time.NewTicker(150 * time.Millisecond)
			defer tick.Stop()
			killed := int64(0)
		wait:
			for {
				select {
				case r = <-done:
					break wait
				case <-tick.C:
					// The clients', once they transfer: not the run's
					// setup.
					var n, k int64
					if err := conn.QueryRow(ctx, runRows).Scan(&n); err != nil || n == 0 {
						continue
					}
					if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
						WHERE datname = current_database() AND pid <> pg_backend_pid() AND (query LIKE 'WITH lo AS%' OR query = 'COMMIT')) k`).Scan(&k); err == nil {
						killed += k
					}
				}
			}
			// Many commits in doubt leave more subsets than the audit
			// tries: it says so and counts only, which is no alarm.
			held := strings.Contains(squeeze(r.stdout), "ledger identity: the rows of the run's ledger ids are the transfers it saw commit")
			if r.code != 0 || !held && !strings.Contains(squeeze(r.stdout), "ledger identity: not checked: ") {
				t.Fatalf("run with its connections killed: exit %d, want 0 and the identity held\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if killed == 0 {
				t.Fatalf("no connection was killed\n%s", r.stdout)
			}
			t.Logf("killed %d backends\n%s", killed, r.stdout[strings.Index(r.stdout, "ambiguous:"):])
		})
	}
}

// A ledger id sequence set back (setval) would give a later run ids a
// recorded run's range covers: the run refuses to start, and records
// nothing.
func TestBankRunRefusesSetBackSequence(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	run := func() result {
		return txload(t.Context(), nil, "run", "bank", "--url", url, "--accounts", "1000", "--init", "keep", "--duration", "500ms", "--progress", "0")
	}
	if r := run(); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	runs, rows := count(t, url, "SELECT count(*) FROM bank_run"), count(t, url, "SELECT count(*) FROM bank_ledger")
	sqlExec(t, url, "SELECT setval('bank_ledger_id', 1)")
	r := run()
	if r.code != 1 || !strings.Contains(r.stderr, "the ledger id sequence bank_ledger_id gave 2, but bank_run and bank_ledger already hold ids up to") ||
		!strings.Contains(r.stderr, "(the sequence was set back): this run's ids would overlap a recorded run's") {
		t.Fatalf("run after setval: exit %d, want 1 and the refusal\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n, m := count(t, url, "SELECT count(*) FROM bank_run"), count(t, url, "SELECT count(*) FROM bank_ledger"); n != runs || m != rows {
		t.Fatalf("the refused run left %d runs and %d ledger rows, want %d and %d", n, m, runs, rows)
	}
	t.Log(r.stderr)
	// check names it too: the runs' bounds lie beyond what the sequence
	// gave. Set past them, as the refusal says, the tables pass.
	if c := txload(t.Context(), nil, "check", "bank", "--url", url); c.code != 1 || !strings.Contains(c.stdout, "bank_ledger_id never gave") ||
		!strings.Contains(c.stdout, "or the sequence altered since (set back") {
		t.Fatalf("check after the refusal: exit %d, want 1 naming the sequence set back\n%s", c.code, c.stdout)
	}
	sqlExec(t, url, "SELECT setval('bank_ledger_id', GREATEST((SELECT max(last_id) FROM bank_run), (SELECT max(id) FROM bank_ledger)))")
	if c := txload(t.Context(), nil, "check", "bank", "--url", url); c.code != 0 {
		t.Fatalf("check with the sequence set past the runs: exit %d\n%s", c.code, c.stdout)
	}
}

// A run on the tables as they are (--init skip) is held to their
// settings as --init keep is: --accounts or --initial-balance given and
// other than the schema's, or a --selection beyond its accounts, exit 2
// before anything is written; without them it runs.
func TestBankRunSkipOtherSettings(t *testing.T) {
	t.Parallel()
	url := newBank(t)
	for _, tc := range []struct{ args, want string }{
		{"--accounts 2000", "txload: the database holds the bank schema of accounts=1000 initial-balance=10000, not the --accounts 2000 asked: give its values, or recreate it with `txload init bank --drop` (in a run: --init fresh)"},
		{"--initial-balance 5", "txload: the database holds the bank schema of accounts=1000 initial-balance=10000, not the --initial-balance 5 asked: give its values, or recreate it with `txload init bank --drop` (in a run: --init fresh)"},
		{"--selection 1500", "txload: the database holds the bank schema of accounts=1000 initial-balance=10000, not the --selection 1500 asked: give its values, or recreate it with `txload init bank --drop` (in a run: --init fresh)"},
	} {
		r := txload(t.Context(), nil, append([]string{"run", "bank", "--url", url, "--init", "skip", "--duration", "1s", "--progress", "0"}, strings.Fields(tc.args)...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != ExitUsage || lines[len(lines)-1] != tc.want || r.stdout != "" {
			t.Errorf("%s: exit %d, want 2 and the last line\n%s\nstdout:\n%s\nstderr:\n%s", tc.args, r.code, tc.want, r.stdout, r.stderr)
		}
	}
	if runs, rows := count(t, url, "SELECT count(*) FROM bank_run"), count(t, url, "SELECT count(*) FROM bank_ledger"); runs != 0 || rows != 0 {
		t.Fatalf("the refused runs left %d runs and %d ledger rows, want 0 and 0", runs, rows)
	}
	if r := txload(t.Context(), nil, "run", "bank", "--url", url, "--init", "skip", "--accounts", "1000", "--selection", "1000", "--duration", "500ms", "--progress", "0"); r.code != 0 {
		t.Fatalf("run of the schema's settings: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
